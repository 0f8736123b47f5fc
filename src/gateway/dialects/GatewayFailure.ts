import type { GatewayError, PolicyRefusal, Violation } from "../../../schema/GatewayError.ts"
import type { ProviderKeyMissing, ProviderKeyUnreadable } from "../../vault/ProviderKeys.ts"
import type { BackendUnavailable } from "../../servicekeys/ServiceKeys.ts"

/** Everything a gateway route can answer with instead of the provider's response. */
export type GatewayFailure =
  | GatewayError
  | PolicyRefusal
  | BackendUnavailable
  | ProviderKeyMissing
  | ProviderKeyUnreadable

export interface FailureView {
  readonly status: number
  readonly code: string
  readonly message: string
  readonly blockedBy?: string | undefined
  readonly violations?: ReadonlyArray<Violation> | undefined
}

/** Status, code and message of a failure, whichever domain raised it. */
export const describeFailure = (failure: GatewayFailure): FailureView => {
  switch (failure._tag) {
    case "BackendUnavailable":
      return { status: 503, code: "backend_unavailable", message: `${failure.backend} backend unavailable` }
    case "ProviderKeyMissing":
      return {
        status: 403,
        code: "provider_key_missing",
        message: `no ${failure.provider} provider key is stored for this organization`
      }
    case "ProviderKeyUnreadable":
      return {
        status: 502,
        code: "provider_key_unreadable",
        message: `the stored ${failure.provider} provider key could not be decrypted`
      }
    case "PolicyRefusal":
      return {
        status: 403,
        code: failure.refusal,
        message: failure.detail,
        blockedBy: failure.blockedBy,
        violations: failure.violations
      }
    default:
      return { status: failure.status, code: failure.code, message: failure.message }
  }
}
