import { Effect } from "effect"
import type { CheckRequest, FirewallCheckResult } from "../../schema/FirewallCheck.ts"
import { tamperedOutcome } from "../guardrails/DelimiterIntegrity.ts"
import { Guardrails } from "../guardrails/Guardrails.ts"
import { strongest } from "../inference/Decision.ts"
import type { NonceCheck } from "../nonces/NonceToken.ts"
import { inspectSealedBlocks } from "../nonces/SealedBlocks.ts"
import { CustomProviders } from "../providers/custom/CustomProviders.ts"
import { unknownProviderReason } from "../providers/custom/KnownProvider.ts"
import { disabledProviders } from "./DisabledProviders.ts"
import { Policies } from "./Policies.ts"
import { providerRefusal } from "./PolicyEvaluation.ts"

// Tampering is judged before, and without, the nonce: the dry run reads no secret and calls every nonce unknown.
const noNonceChecks = () => Effect.succeed(new Map<string, NonceCheck>())

/**
 * How many sealed blocks of `text` the relay would call tampered: the relay's
 * own step over the text as one chat message (observe mode, so nothing is
 * removed and the rules see the text as given).
 */
const tamperedBlocks = (text: string) => {
  const body = { messages: [{ role: "user", content: text }] }
  return Effect.map(
    inspectSealedBlocks({
      surface: "chat",
      raw: Buffer.from(JSON.stringify(body)),
      body,
      mode: "observe",
      checkAll: noNonceChecks
    }),
    (sealed) => sealed.summary?.tampered ?? 0
  )
}

/**
 * The dry run behind `gateway check` and `POST /manage/v1/guardrails/check`
 * (its wire types are in `schema/FirewallCheck.ts`), in the relay's order:
 * sealed blocks and `delimiter_integrity`, the provider policy, then the
 * guardrail rules. Built once per process: the platform switch
 * (`VDB_GATEWAY_DISABLED_PROVIDERS`) is read at start, like the gateway does.
 */
export const makeDryRun = Effect.gen(function*() {
  const guardrails = yield* Guardrails
  const policies = yield* Policies
  const custom = yield* CustomProviders
  const disabled = yield* disabledProviders
  return Effect.fn("FirewallCheck.dryRun")(function*(orgUuid: string, request: CheckRequest) {
    const tampered = yield* tamperedBlocks(request.text)
    const sealed = tampered === 0 ? undefined : tamperedOutcome(yield* guardrails.delimiterIntegrity(orgUuid), tampered)
    // A refusal names the rules that matched before it, as the relay's 403 does.
    const flagged = sealed === undefined ? [] : [sealed.rule.name]
    const refused = (code: string, message: string, blockedBy?: string): FirewallCheckResult => ({
      decision: "block",
      rules: flagged,
      redactions: 0,
      ...(blockedBy !== undefined ? { blocked_by: blockedBy } : {}),
      refusal: { code, message }
    })
    if (sealed?.refusal !== undefined) {
      return refused(sealed.refusal.code, sealed.refusal.message, sealed.rule.name)
    }
    if (request.provider !== undefined) {
      const provider = request.provider.trim().toLowerCase()
      // The relay answers a provider it does not serve with 404 unknown_provider before inspecting anything.
      const unknown = yield* unknownProviderReason(custom, orgUuid, provider)
      if (unknown !== undefined) return refused("unknown_provider", unknown)
      const snapshot = yield* policies.snapshot(orgUuid)
      const refusal = providerRefusal(snapshot, provider, disabled, false)
      if (refusal !== undefined) return refused(refusal.code, refusal.message)
    }
    const checked = yield* guardrails.check(orgUuid, request.text)
    if (sealed === undefined) return checked satisfies FirewallCheckResult
    const result: FirewallCheckResult = {
      ...checked,
      decision: strongest("flag", checked.decision),
      rules: [...flagged, ...checked.rules]
    }
    return result
  })
})
