import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { randomUUID } from "node:crypto"
import type { GuardrailError } from "../../schema/GuardrailRule.ts"
import { Invalidation } from "../../src/db/Invalidation.ts"
import {
  compileRuleSet,
  MAX_PATTERN_LENGTH,
  MAX_RULES_PER_ORG,
  type StoredRule
} from "../../src/guardrails/CompiledRules.ts"
import { makeGuardrails } from "../../src/guardrails/Guardrails.ts"
import { memoryGuardrailStore } from "../../src/guardrails/GuardrailStore.ts"

const ORG = "7a1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"

const setup = Effect.gen(function*() {
  const store = memoryGuardrailStore()
  const guardrails = yield* makeGuardrails({ store, ttl: Duration.minutes(1), failOpen: false })
  return { guardrails, store }
})

const refusal = (error: GuardrailError) => {
  assert.strictEqual(error.reason._tag, "GuardrailRuleInvalid")
  assert.strictEqual(error.status, 400)
  return error.message
}

/** `words` alternatives, `wNq[a-z]{1,3}`: what the attack used, 8000 of them in 140 KB. */
const alternation = (words: number, tag = "") =>
  "(?:" + Array.from({ length: words }, (_, i) => `w${tag}${i.toString(36)}q[a-z]{1,3}`).join("|") + ")"

const chat = (content: string) => {
  const body = Buffer.from(JSON.stringify({ model: "m", messages: [{ role: "user", content }] }))
  return [body, JSON.parse(body.toString())] as const
}

const stored = (pattern: string, name = "r"): StoredRule => ({
  uuid: randomUUID(),
  org_uuid: ORG,
  name,
  rule_type: "blocked_pattern",
  action: "block",
  priority: 100,
  enabled: true,
  pattern,
  created_at: new Date(0),
  updated_at: new Date(0)
})

describe("guardrail rule limits", () => {
  it.effect("a pattern over the length cap is refused at create and update, one at the cap is taken", () =>
    Effect.gen(function*() {
      const { guardrails } = yield* setup
      const atCap = "a".repeat(MAX_PATTERN_LENGTH)
      const rule = yield* guardrails.create(ORG, { name: "at cap", rule_type: "blocked_pattern", pattern: atCap })
      const long = yield* Effect.flip(
        guardrails.create(ORG, { name: "over", rule_type: "blocked_pattern", pattern: atCap + "a" })
      )
      assert.strictEqual(refusal(long), `pattern is longer than ${MAX_PATTERN_LENGTH} characters`)
      const attack = yield* Effect.flip(
        guardrails.create(ORG, { name: "attack", rule_type: "blocked_pattern", pattern: alternation(8000) })
      )
      assert.match(refusal(attack), /longer than/)
      const patched = yield* Effect.flip(guardrails.update(ORG, rule.uuid, { pattern: atCap + "a" }))
      assert.match(refusal(patched), /longer than/)
      assert.deepStrictEqual((yield* guardrails.list(ORG)).map((r) => r.name), ["at cap"])
    }).pipe(Effect.provide(Invalidation.layerMemory)))

  it.effect("a short pattern whose compiled program is too large is refused; so are patterns too large together", () =>
    Effect.gen(function*() {
      const { guardrails } = yield* setup
      // 18 characters that RE2 alone accepts (it takes tens of ms to compile): the budget, not the length, refuses it.
      const alone = yield* Effect.flip(
        guardrails.create(ORG, { name: "letters", rule_type: "blocked_pattern", pattern: "[\\p{L}\\p{M}]{2,40}" })
      )
      assert.match(refusal(alone), /^pattern compiles to more than RE2's 1 MiB budget/)
      // Each of these fits; a few dozen of them together do not.
      let message: string | undefined
      for (let i = 0; i < 60 && message === undefined; i++) {
        const created = yield* Effect.result(
          guardrails.create(ORG, {
            name: `alt ${i}`,
            rule_type: "blocked_pattern",
            pattern: alternation(200, `x${i}y`)
          })
        )
        if (created._tag === "Failure") message = refusal(created.failure)
      }
      assert.match(message ?? "all 60 taken", /^the organization's patterns together compile to more than/)
      const kept = yield* guardrails.list(ORG)
      assert.isAbove(kept.length, 1)
      // Disabling, renaming and re-prioritising an accepted rule add nothing to compile: never refused.
      yield* guardrails.setEnabled(ORG, kept[0]!.uuid, false)
      yield* guardrails.update(ORG, kept[0]!.uuid, { name: "renamed", priority: 1 })
      // A disabled rule still counts (enabling re-checks nothing), so one more pattern is still refused.
      const more = yield* Effect.flip(
        guardrails.create(ORG, { name: "one more", rule_type: "blocked_pattern", pattern: alternation(200, "z") })
      )
      assert.match(refusal(more), /together/)
    }).pipe(Effect.provide(Invalidation.layerMemory)))

  it.effect(`an organization has at most ${MAX_RULES_PER_ORG} rules`, () =>
    Effect.gen(function*() {
      const { guardrails } = yield* setup
      for (let i = 0; i < MAX_RULES_PER_ORG; i++) {
        yield* guardrails.create(ORG, { name: `r${i}`, rule_type: "blocked_pattern", pattern: `tok${i}[a-z]` })
      }
      const over = yield* Effect.flip(
        guardrails.create(ORG, { name: "seals", rule_type: "delimiter_integrity", action: "block" })
      )
      assert.strictEqual(refusal(over), `an organization has at most ${MAX_RULES_PER_ORG} guardrail rules`)
      const other = "7a1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4c"
      yield* guardrails.create(other, { name: "r0", rule_type: "blocked_pattern", pattern: "tok" })
      const first = (yield* guardrails.list(ORG))[0]!
      yield* guardrails.remove(ORG, first.uuid)
      yield* guardrails.create(ORG, { name: "seals", rule_type: "delimiter_integrity", action: "block" })
    }).pipe(Effect.provide(Invalidation.layerMemory)))

  it.effect("a rule stored before the limits keeps enforcing and can be renamed or disabled; a new pattern meets them", () =>
    Effect.gen(function*() {
      const { guardrails, store } = yield* setup
      const legacy = stored(alternation(400) + "|legacy-secret", "legacy")
      assert.isAbove(legacy.pattern!.length, MAX_PATTERN_LENGTH)
      yield* store.insert(legacy)
      const [body, parsed] = chat("the legacy-secret")
      assert.strictEqual((yield* guardrails.evaluate(ORG, "chat", body, parsed)).blockedBy, "legacy")
      const listed = (yield* guardrails.list(ORG))[0]!
      assert.deepStrictEqual([listed.compiles, listed.pattern], [true, legacy.pattern])
      yield* guardrails.update(ORG, legacy.uuid, { name: "old rule", priority: 3, action: "flag" })
      assert.deepStrictEqual((yield* guardrails.evaluate(ORG, "chat", body, parsed)).rules, ["old rule"])
      yield* guardrails.setEnabled(ORG, legacy.uuid, false)
      yield* guardrails.setEnabled(ORG, legacy.uuid, true)
      const changed = yield* Effect.flip(guardrails.update(ORG, legacy.uuid, { pattern: legacy.pattern + "|more" }))
      assert.match(refusal(changed), /longer than/)
      yield* guardrails.update(ORG, legacy.uuid, { pattern: "legacy-secret" })
    }).pipe(Effect.provide(Invalidation.layerMemory)))

  it.effect("NUL and other control characters in a name, and NUL in a pattern, are refused at create and update", () =>
    Effect.gen(function*() {
      const { guardrails } = yield* setup
      for (const name of ["zero\u0000byte", "line\nbreak", "tab\there", "bidi\u202Eevil", "lone\ud800"]) {
        const error = yield* Effect.flip(guardrails.create(ORG, { name, rule_type: "blocked_pattern", pattern: "x" }))
        assert.strictEqual(
          refusal(error),
          "name must be printable text (no control characters such as NUL, newlines or tabs)"
        )
      }
      const nul = yield* Effect.flip(
        guardrails.create(ORG, { name: "nul", rule_type: "blocked_pattern", pattern: "a\u0000b" })
      )
      assert.strictEqual(refusal(nul), "pattern must not contain a NUL character (U+0000)")
      const rule = yield* guardrails.create(ORG, { name: "fine", rule_type: "blocked_pattern", pattern: "ab" })
      assert.match(refusal(yield* Effect.flip(guardrails.update(ORG, rule.uuid, { name: "a\u0000" }))), /printable/)
      assert.match(refusal(yield* Effect.flip(guardrails.update(ORG, rule.uuid, { pattern: "\u0000" }))), /NUL/)
      assert.deepStrictEqual((yield* guardrails.show(ORG, rule.uuid)).name, "fine")
    }).pipe(Effect.provide(Invalidation.layerMemory)))
})

describe("compiled patterns are cached per pattern and flags", () => {
  it("a change to one rule recompiles only that rule; the set is rebuilt", () => {
    const a = stored("alpha[0-9]+", "a")
    const b = stored("beta[0-9]+", "b")
    const first = compileRuleSet([a, b], "1")
    // b renamed and a's pattern changed: b's compiled regexes are the very same objects.
    const second = compileRuleSet([{ ...a, pattern: "alpha[a-z]+" }, { ...b, name: "b2" }], "2")
    const byName = (set: typeof first, name: string) => set.rules.find((r) => r.name === name)!
    assert.strictEqual(byName(second, "b2").test, byName(first, "b").test)
    assert.strictEqual(byName(second, "b2").all, byName(first, "b").all)
    assert.strictEqual(byName(second, "b2").scan, byName(first, "b").scan)
    assert.notStrictEqual(byName(second, "a").test, byName(first, "a").test)
    assert.notStrictEqual(second.set, first.set)
    const matched = second.set!.match("x alpha1 beta2").map((i) => second.rules[second.setRules[i]!]!.name)
    assert.deepStrictEqual(matched, ["b2"])
  })
})
