import { Effect, Schema } from "effect"
import { GuardrailDecision } from "../../../schema/GuardrailRule.ts"
import { Guardrails } from "../../guardrails/Guardrails.ts"
import { disabledProviders } from "../../policies/DisabledProviders.ts"
import { Policies } from "../../policies/Policies.ts"
import { providerRefusal } from "../../policies/PolicyEvaluation.ts"

/**
 * The dry run behind `gateway check` and `POST /manage/v1/guardrails/check`:
 * what the firewall would decide for one text, optionally sent to one
 * provider. Nothing is stored, logged or counted; the matched text never
 * appears in the result (rule names only).
 */
export const FirewallCheckResult = Schema.Struct({
  decision: GuardrailDecision,
  /** Names of the guardrail rules that matched, in evaluation order. */
  rules: Schema.Array(Schema.String),
  redactions: Schema.Int,
  blocked_by: Schema.optional(Schema.String),
  /** With a provider: the organization's provider policy (or the platform switch) refuses it before any guardrail runs. */
  refusal: Schema.optional(Schema.Struct({ code: Schema.String, message: Schema.String }))
})
export type FirewallCheckResult = typeof FirewallCheckResult.Type

export const CheckRequest = Schema.Struct({
  text: Schema.String,
  provider: Schema.optional(Schema.String)
})
export type CheckRequest = typeof CheckRequest.Type

/** Built once per process: the platform switch (`VDB_GATEWAY_DISABLED_PROVIDERS`) is read at start, like the gateway does. */
export const makeDryRun = Effect.gen(function*() {
  const guardrails = yield* Guardrails
  const policies = yield* Policies
  const disabled = yield* disabledProviders
  return Effect.fn("FirewallCheck.dryRun")(function*(orgUuid: string, request: CheckRequest) {
    if (request.provider !== undefined) {
      const snapshot = yield* policies.snapshot(orgUuid)
      const refusal = providerRefusal(snapshot, request.provider.trim().toLowerCase(), disabled, false)
      if (refusal !== undefined) {
        const refused: FirewallCheckResult = {
          decision: "block",
          rules: [],
          redactions: 0,
          refusal: { code: refusal.code, message: refusal.message }
        }
        return refused
      }
    }
    const result: FirewallCheckResult = yield* guardrails.check(orgUuid, request.text)
    return result
  })
})
