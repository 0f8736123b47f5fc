import { PolicyRefusal, type Violation } from "../../schema/PolicyRefusal.ts"
import type { DelimiterIntegrityRule } from "./GuardrailOutcome.ts"

/** What a request's tampered sealed blocks come to under the organization's `delimiter_integrity` rules. */
export interface TamperedOutcome {
  readonly rule: DelimiterIntegrityRule
  readonly violation: Violation
  /** With a `block` rule: the 403 `delimiter_tampered`; with `flag`, undefined (the decision is `flag`). */
  readonly refusal: PolicyRefusal | undefined
}

/**
 * The first enabled `delimiter_integrity` rule (priority order) decides, in
 * both modes; without a rule, or without a tampered block, nothing happens.
 * One function for the relay's firewall step and the dry run, so both give
 * the same answer for the same text.
 */
export const tamperedOutcome = (
  rules: ReadonlyArray<DelimiterIntegrityRule>,
  tampered: number
): TamperedOutcome | undefined => {
  const rule = rules[0]
  if (rule === undefined || tampered === 0) return undefined
  const violation: Violation = {
    policy_uuid: rule.uuid,
    policy_name: rule.name,
    rule_type: "delimiter_integrity",
    action: rule.action,
    detail: `${tampered} sealed block(s) failed the integrity check`
  }
  const refusal = rule.action === "block"
    ? new PolicyRefusal({
      refusal: "delimiter_tampered",
      detail: `a sealed block failed the integrity check (rule ${rule.name})`,
      blockedBy: rule.name,
      violations: [violation]
    })
    : undefined
  return { rule, violation, refusal }
}
