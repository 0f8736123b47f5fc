import { statusOf } from "../../../schema/ErrorStatus.ts"
import type { GatewayError } from "../../../schema/GatewayError.ts"
import type { PolicyRefusal, Violation } from "../../../schema/PolicyRefusal.ts"
import type { BackendUnavailable } from "../../servicekeys/ServiceKeys.ts"
import type { ProviderKeyMissing, ProviderKeyUnreadable } from "../../vault/ProviderKeys.ts"

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

/**
 * Status, code and message of a failure, whichever domain raised it. The status is always the
 * one the error's class declares; the code and message of another domain's error are how this
 * dialect words it.
 */
export const describeFailure = (failure: GatewayFailure): FailureView => {
  const status = statusOf(failure)
  switch (failure._tag) {
    case "BackendUnavailable":
      return { status, code: "backend_unavailable", message: `${failure.backend} backend unavailable` }
    case "ProviderKeyMissing":
      return {
        status,
        code: "provider_key_missing",
        message: `no ${failure.provider} provider key is stored for this organization`
      }
    case "ProviderKeyUnreadable":
      return {
        status,
        code: "provider_key_unreadable",
        message: `the stored ${failure.provider} provider key could not be decrypted`
      }
    case "PolicyRefusal":
      return {
        status,
        code: failure.refusal,
        message: failure.detail,
        blockedBy: failure.blockedBy,
        violations: failure.violations
      }
    default:
      return { status, code: failure.code, message: failure.message }
  }
}
