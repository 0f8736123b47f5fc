import { Effect, Layer } from "effect"
import { PolicyRefusal, type Violation } from "../../../schema/GatewayError.ts"
import { MAX_INSPECTED_DEPTH } from "../../guardrails/GuardrailEngine.ts"
import { tamperedOutcome } from "../../guardrails/DelimiterIntegrity.ts"
import { Guardrails } from "../../guardrails/Guardrails.ts"
import { type Removal, spliceEdits } from "../../guardrails/JsonSplice.ts"
import { clientName } from "../../policies/ClientIdentity.ts"
import { disabledProviders } from "../../policies/DisabledProviders.ts"
import {
  capabilityCheck,
  clientRefusal,
  modelRefusal,
  providerRefusal,
  visibleModels
} from "../../policies/PolicyEvaluation.ts"
import { Policies } from "../../policies/Policies.ts"
import { Nonces } from "../nonces/Nonces.ts"
import { inspectSealedBlocks, nonceModeOf } from "../nonces/SealedBlocks.ts"
import { surfaceOf } from "../ProviderCatalog.ts"
import { BackendUnavailable } from "../ServiceKeys.ts"
import { Inspection } from "./Inspection.ts"
import { type Decision, type InboundRequest, refusedWith, strongest, type Verdict } from "./Verdict.ts"

// Guardrail rules live in the policy backend: their store being unreachable is the spec's "policy backend unavailable".
const policyUnavailable = new BackendUnavailable({ backend: "policy" })
const asPolicyUnavailable = () => policyUnavailable

const encoder = new TextEncoder()

/**
 * The firewall step, in the order the spec implies:
 * 1. sealed blocks (classified against this caller's nonces; removed in
 *    enforce mode before anything else looks at the text; a
 *    `delimiter_integrity` rule decides what a tampered block does);
 * 2. provider, model and client policy (fail closed);
 * 3. tool, MCP-server and skill policy, and strip entries;
 * 4. guardrails over the body as it will be sent.
 * Sealed-block removal rewrites only the changed JSON strings of the
 * original bytes; a strip re-serialises the body (rare, and the removed
 * entries change the arrays' shape); otherwise the original bytes (or the
 * guardrails' byte-exact redaction) go upstream.
 */
export const makeFirewall = Effect.gen(function*() {
  const policies = yield* Policies
  const guardrails = yield* Guardrails
  const nonces = yield* Nonces
  const disabled = yield* disabledProviders

  const inspect = Effect.fnUntraced(function*(request: InboundRequest) {
    const { orgUuid, provider, headers } = request
    const surface = surfaceOf(request.endpoint)

    const sealed = yield* inspectSealedBlocks({
      surface,
      raw: request.body,
      body: request.parsed,
      mode: nonceModeOf(headers),
      checkAll: (list) => nonces.checkAll(orgUuid, list)
    })
    const nonce = sealed.summary
    let decision: Decision = "allow"
    const rules: Array<string> = []
    const violations: Array<Violation> = []
    // Policy refusals come before anything is stripped or redacted.
    const refuse = (refusal: PolicyRefusal) =>
      Effect.fail(refusedWith(refusal, {
        decision: "block",
        rules: refusal.blockedBy === undefined ? rules : [...rules, refusal.blockedBy],
        redactions: 0,
        stripped: 0,
        nonce
      }))

    if (nonce !== undefined && nonce.tampered > 0) {
      // The same decision as the dry run's (src/guardrails/DelimiterIntegrity.ts).
      const tampered = tamperedOutcome(yield* Effect.mapError(guardrails.delimiterIntegrity(orgUuid), asPolicyUnavailable), nonce.tampered)
      if (tampered?.refusal !== undefined) return yield* refuse(tampered.refusal)
      if (tampered !== undefined) {
        decision = "flag"
        rules.push(tampered.rule.name)
        violations.push(tampered.violation)
      }
    }

    const snapshot = yield* policies.snapshot(orgUuid)
    const providerRefused = providerRefusal(snapshot, provider.slug, disabled, false)
    if (providerRefused !== undefined) return yield* refuse(providerRefused)
    const policy = snapshot.forProvider(provider.slug)
    const modelRefused = modelRefusal(policy, provider.slug, request.envelope.model)
    if (modelRefused !== undefined) return yield* refuse(modelRefused)
    if (policy.clients.allow.size > 0 || policy.clients.deny.size > 0) {
      const clientRefused = clientRefusal(policy, clientName(headers))
      if (clientRefused !== undefined) return yield* refuse(clientRefused)
    }

    let body = sealed.body ?? request.parsed
    let stripped = 0
    let removals: ReadonlyArray<Removal> = []
    if (!policy.empty) {
      const capabilities = capabilityCheck(policy, surface, body)
      if (capabilities instanceof PolicyRefusal) return yield* refuse(capabilities)
      stripped = capabilities.stripped.length
      removals = capabilities.removals
      if (capabilities.body !== undefined) body = capabilities.body
    }

    // Sealed-block removal rewrites only the changed strings, and a strip takes out only what it
    // removes: the rest goes upstream as the client's bytes. Re-serialised only when the bytes
    // cannot be edited that way (a key named twice on a removal's path).
    const rewritten = body === request.parsed
      ? undefined
      : spliceEdits(request.body, [...(sealed.body !== undefined ? sealed.edits : []), ...removals]) ??
        encoder.encode(JSON.stringify(body))
    const outcome = yield* Effect.mapError(
      guardrails.evaluate(orgUuid, surface, rewritten ?? request.body, body),
      asPolicyUnavailable
    )
    if (outcome.uninspectable === true) {
      return yield* refuse(new PolicyRefusal({
        refusal: "request_uninspectable",
        detail: `the request body nests JSON deeper than ${MAX_INSPECTED_DEPTH} levels, which the firewall does not inspect`
      }))
    }
    rules.push(...outcome.rules)
    if (outcome.decision === "block") {
      const blockedBy = outcome.blockedBy ?? outcome.rules[outcome.rules.length - 1] ?? "guardrail"
      return yield* Effect.fail(refusedWith(
        new PolicyRefusal({
          refusal: "request_blocked",
          detail: `request blocked by guardrail rule ${blockedBy}`,
          blockedBy,
          violations: [...violations, ...outcome.violations]
        }),
        { decision: "block", rules, redactions: outcome.redactions, stripped, nonce }
      ))
    }
    const verdict: Verdict = {
      decision: strongest(decision, outcome.decision),
      rules,
      redactions: outcome.redactions,
      stripped,
      nonce,
      body: outcome.body ?? rewritten
    }
    return verdict
  })

  const admitProvider = Effect.fnUntraced(function*(orgUuid: string, provider: InboundRequest["provider"]) {
    const refusal = providerRefusal(yield* policies.snapshot(orgUuid), provider.slug, disabled, true)
    if (refusal !== undefined) return yield* Effect.fail(refusal)
  })

  const listModels = Effect.fnUntraced(function*(orgUuid: string, provider: InboundRequest["provider"]) {
    const snapshot = yield* policies.snapshot(orgUuid)
    const refusal = providerRefusal(snapshot, provider.slug, disabled, true)
    if (refusal !== undefined) return yield* Effect.fail(refusal)
    return visibleModels(snapshot.forProvider(provider.slug), provider.spec.models)
  })

  return Inspection.of({ inspect, admitProvider, visibleModels: listModels })
})

/** The firewall as the gateway's `Inspection`; needs `Policies`, `Guardrails` and `Nonces`. */
export const FirewallLayer = Layer.effect(Inspection)(makeFirewall)
