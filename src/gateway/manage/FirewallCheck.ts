import { Effect } from "effect"
import type { CheckRequest, FirewallCheckResult } from "../../../schema/FirewallCheck.ts"
import { Guardrails } from "../../guardrails/Guardrails.ts"
import { disabledProviders } from "../../policies/DisabledProviders.ts"
import { Policies } from "../../policies/Policies.ts"
import { providerRefusal } from "../../policies/PolicyEvaluation.ts"

/**
 * The dry run behind `gateway check` and `POST /manage/v1/guardrails/check`
 * (its wire types are in `schema/FirewallCheck.ts`). Built once per process:
 * the platform switch (`VDB_GATEWAY_DISABLED_PROVIDERS`) is read at start,
 * like the gateway does.
 */
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
