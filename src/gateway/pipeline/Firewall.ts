import { Effect, Layer } from "effect"
import { PolicyRefusal, type Violation } from "../../../schema/PolicyRefusal.ts"
import { tamperedOutcome } from "../../guardrails/DelimiterIntegrity.ts"
import { MAX_INSPECTED_DEPTH } from "../../guardrails/GuardrailEngine.ts"
import { Guardrails } from "../../guardrails/Guardrails.ts"
import { type Removal, shapeOf, spliceEdits } from "../../guardrails/JsonSplice.ts"
import { Nonces } from "../../nonces/Nonces.ts"
import { inspectSealedBlocks, nonceModeOf } from "../../nonces/SealedBlocks.ts"
import { clientName } from "../../policies/ClientIdentity.ts"
import { disabledProviders } from "../../policies/DisabledProviders.ts"
import { Policies } from "../../policies/Policies.ts"
import {
  capabilityCheck,
  clientRefusal,
  modelsRefusal,
  providerRefusal,
  visibleModels
} from "../../policies/PolicyEvaluation.ts"
import { surfaceOf } from "../../providers/ProviderCatalog.ts"
import { BackendUnavailable } from "../../servicekeys/ServiceKeys.ts"
import { countDecision, countRefusal } from "./FirewallMetrics.ts"
import { Inspection } from "./Inspection.ts"
import { type Decision, type InboundRequest, refusedWith, strongest, type Verdict } from "./Verdict.ts"

// Guardrail rules live in the policy backend: their store being unreachable is the spec's "policy backend unavailable".
const policyUnavailable = new BackendUnavailable({ backend: "policy" })
const asPolicyUnavailable = () => policyUnavailable

const encoder = new TextEncoder()

// Made per refusal: `refusedWith` attaches the verdict to the refusal it is given.
// The policies read fields by their exact names; some upstreams (Go's encoding/json) match names in any case.
const caseVariant = () =>
  new PolicyRefusal({
    refusal: "request_uninspectable",
    detail: "the request body spells a field the policies read (tools, name, model, ...) in another letter case, " +
      "which some providers read as that field; send it in lower case"
  })

const uninspectable = (detail?: string) =>
  new PolicyRefusal({
    refusal: "request_uninspectable",
    detail: detail ??
      `the request body nests JSON deeper than ${MAX_INSPECTED_DEPTH} levels, which the firewall does not inspect`
  })

/**
 * The firewall step, in the order the spec implies:
 * 1. sealed blocks (classified against this caller's nonces; removed in
 *    enforce mode before anything else looks at the text; a
 *    `delimiter_integrity` rule decides what a tampered block does);
 * 2. provider, model and client policy (fail closed);
 * 3. tool, MCP-server and skill policy, and strip entries;
 * 4. guardrails over the body as it will be sent.
 * Sealed-block removal rewrites only the changed JSON strings of the
 * original bytes and a strip deletes only what it removes; otherwise the
 * original bytes (or the guardrails' byte-exact redaction) go upstream. A body
 * naming a key twice that a check read goes re-serialised from that reading.
 */
export const makeFirewall = Effect.gen(function*() {
  const policies = yield* Policies
  const guardrails = yield* Guardrails
  const nonces = yield* Nonces
  const disabled = yield* disabledProviders

  const context = yield* Effect.context<never>()

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
    const refuse = (refusal: PolicyRefusal) => {
      countRefusal(refusal.refusal, context)
      return Effect.fail(refusedWith(refusal, {
        decision: "block",
        rules: refusal.blockedBy === undefined ? rules : [...rules, refusal.blockedBy],
        redactions: 0,
        stripped: 0,
        nonce
      }))
    }

    if (nonce !== undefined && nonce.tampered > 0) {
      // The same decision as the dry run's (src/guardrails/DelimiterIntegrity.ts).
      const tampered = tamperedOutcome(
        yield* Effect.mapError(guardrails.delimiterIntegrity(orgUuid), asPolicyUnavailable),
        nonce.tampered
      )
      if (tampered?.refusal !== undefined) return yield* refuse(tampered.refusal)
      if (tampered !== undefined) {
        decision = "flag"
        rules.push(tampered.rule.name)
        violations.push(tampered.violation)
      }
    }

    // Enforce mode is there to keep forged blocks from the model; one it cannot remove is not sent.
    if (sealed.refusal !== undefined) return yield* refuse(sealed.refusal)

    const snapshot = yield* policies.snapshot(orgUuid)
    const providerRefused = providerRefusal(snapshot, provider.slug, disabled, false)
    if (providerRefused !== undefined) return yield* refuse(providerRefused)
    const policy = snapshot.forProvider(provider.slug)
    // Every model the body names (fallback lists, server tools, routers' patterns), as the sealed-block step left it.
    const modelRefused = modelsRefusal(
      policy,
      provider.slug,
      surface,
      sealed.body ?? request.parsed,
      request.envelope.model
    )
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

    // What the checks above read is the parsed body (its model, tools, MCP servers and skills; in
    // enforce mode, its text). A key named twice there is read as its last occurrence, and a parser
    // upstream that keeps the first would read what no check did: such a body goes as it was read,
    // re-serialised, as the guardrails do with theirs (GuardrailEngine). A body nested deeper than
    // the firewall reads is refused, as by the guardrails.
    const shape = policy.empty && nonceModeOf(headers) !== "enforce"
      ? undefined
      : shapeOf(request.body, MAX_INSPECTED_DEPTH, { caseVariants: !policy.empty })
    if (shape?.tooDeep === true) return yield* refuse(uninspectable())
    if (shape?.caseVariantKeys === true) return yield* refuse(caseVariant())
    // Otherwise sealed-block removal rewrites only the changed strings, and a strip takes out only
    // what it removes: the rest goes upstream as the client's bytes.
    const rewritten = shape?.duplicateKeys === true
      ? encoder.encode(JSON.stringify(body))
      : body === request.parsed
      ? undefined
      : spliceEdits(request.body, [...(sealed.body !== undefined ? sealed.edits : []), ...removals]) ??
        encoder.encode(JSON.stringify(body))
    const outcome = yield* Effect.mapError(
      guardrails.evaluate(orgUuid, surface, rewritten ?? request.body, body),
      asPolicyUnavailable
    )
    if (outcome.uninspectable === true) return yield* refuse(uninspectable(outcome.uninspectableDetail))
    rules.push(...outcome.rules)
    if (outcome.decision === "block") {
      const blockedBy = outcome.blockedBy ?? outcome.rules[outcome.rules.length - 1] ?? "guardrail"
      countRefusal("request_blocked", context)
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
    countDecision(verdict.decision, context)
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
