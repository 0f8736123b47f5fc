import type { InferenceEnvelope } from "../../../schema/GatewayRequest.ts"
import type { Provider } from "../ProviderCatalog.ts"
import type { Endpoint } from "../providers/ProviderSpec.ts"

export type Decision = "allow" | "redact" | "flag" | "block"

/** Sealed-block counts for `X-Gateway-Firewall-Nonce`; present only when the request carried sealed blocks. */
export interface NonceSummary {
  readonly mode: "observe" | "enforce"
  readonly verified: number
  readonly unknown: number
  readonly tampered: number
  readonly stripped: number
}

/** What the inspection steps see: the request as received, decoded only where the gateway needs it. */
export interface InboundRequest {
  readonly requestId: string
  readonly orgUuid: string
  readonly provider: Provider
  readonly endpoint: Endpoint
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  /** The exact bytes received. */
  readonly body: Uint8Array
  readonly envelope: InferenceEnvelope
  /** The whole parsed body, for steps that scan text segments (guardrails, sealed blocks). */
  readonly parsed: Readonly<Record<string, unknown>>
}

export interface Verdict {
  readonly decision: Decision
  /** Names of matched rules. */
  readonly rules: ReadonlyArray<string>
  readonly redactions: number
  readonly stripped: number
  readonly nonce?: NonceSummary | undefined
  /** Set only when a step rewrote the body (redaction, sealed-block or strip removal); otherwise the original bytes go upstream. */
  readonly body?: Uint8Array | undefined
}

export const allowVerdict: Verdict = { decision: "allow", rules: [], redactions: 0, stripped: 0 }
