import type { InferenceEnvelope } from "../../../schema/GatewayRequest.ts"
import type { PolicyRefusal } from "../../../schema/PolicyRefusal.ts"
import type { Decision } from "../../inference/Decision.ts"
import type { NonceSummary } from "../../nonces/SealedBlocks.ts"
import type { Endpoint } from "../../providers/catalog/ProviderSpec.ts"
import type { Provider } from "../../providers/ProviderCatalog.ts"

export { type Decision, strongest } from "../../inference/Decision.ts"
export type { NonceSummary } from "../../nonces/SealedBlocks.ts"

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

const refusalVerdict = Symbol.for("vdb/gateway/RefusalVerdict")

/**
 * Attaches what the inspection knew when it refused (matched rules, nonce
 * counts) to the refusal, so the 403 carries the same firewall headers a
 * success would. Not part of the error's schema: it never reaches the body.
 */
export const refusedWith = (refusal: PolicyRefusal, verdict: Verdict): PolicyRefusal => {
  Object.defineProperty(refusal, refusalVerdict, { value: verdict, enumerable: false })
  return refusal
}

/** The verdict `refusedWith` attached, if any. */
export const verdictOfRefusal = (refusal: PolicyRefusal): Verdict | undefined =>
  (refusal as unknown as { readonly [refusalVerdict]?: Verdict })[refusalVerdict]
