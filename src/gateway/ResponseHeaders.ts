import type { Verdict } from "./pipeline/Verdict.ts"

const MAX_RULE_NAMES = 8
const MAX_RULES_BYTES = 512

/** Percent-encoded, comma-separated names: at most 8 names or 512 bytes, whichever comes first. */
export const rulesHeader = (rules: ReadonlyArray<string>): string => {
  let out = ""
  for (let i = 0; i < rules.length && i < MAX_RULE_NAMES; i++) {
    const next = (out === "" ? "" : out + ",") + encodeURIComponent(rules[i]!)
    if (next.length > MAX_RULES_BYTES) break
    out = next
  }
  return out
}

/**
 * The firewall headers of a response. The request id is on every response;
 * the decision and its counts appear once the inspection step has run.
 */
export const firewallHeaders = (
  requestId: string,
  verdict: Verdict | undefined,
  into: Record<string, string> = {}
): Record<string, string> => {
  into["x-gateway-firewall-request-id"] = requestId
  if (verdict !== undefined) {
    into["x-gateway-firewall-decision"] = verdict.decision
    into["x-gateway-firewall-rules"] = rulesHeader(verdict.rules)
    into["x-gateway-firewall-redactions"] = String(verdict.redactions)
    into["x-gateway-firewall-stripped"] = String(verdict.stripped)
    if (verdict.nonce !== undefined) {
      const n = verdict.nonce
      into["x-gateway-firewall-nonce"] =
        `mode=${n.mode};verified=${n.verified};unknown=${n.unknown};tampered=${n.tampered};stripped=${n.stripped}`
    }
  }
  return into
}
