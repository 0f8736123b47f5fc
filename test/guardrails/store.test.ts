import { assert, describe, layer } from "@effect/vitest"
import { Cause, Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { GuardrailError } from "../../schema/GuardrailRule.ts"
import { MAX_RULES_PER_ORG } from "../../src/guardrails/CompiledRules.ts"
import { Guardrails } from "../../src/guardrails/Guardrails.ts"
import { SqlBackends } from "../support/database.ts"

const ORG = "3c9a1f0e-2b7d-4e8a-9f1c-5d6e7a8b9c0d"
const OTHER = "3c9a1f0e-2b7d-4e8a-9f1c-5d6e7a8b9c0e"

const chat = (content: string) => {
  const body = Buffer.from(JSON.stringify({ model: "m", messages: [{ role: "user", content }] }))
  return { body, parsed: JSON.parse(body.toString()) as unknown }
}

describe.each(SqlBackends)("Guardrails on $name", ({ layer: database }) => {
  layer(Guardrails.layer.pipe(Layer.provideMerge(database)), { excludeTestServices: true })((it) => {
    it.effect("stores rules per organization and evaluates them in priority order", () =>
      Effect.gen(function*() {
        const guardrails = yield* Guardrails
        const flag = yield* guardrails.create(ORG, {
          name: "mentions-codes",
          rule_type: "blocked_pattern",
          action: "flag",
          pattern: "codes",
          priority: 5
        })
        const ssn = yield* guardrails.create(ORG, {
          name: "ssn",
          rule_type: "pii_redact",
          pattern: "\\d{3}-\\d{2}-\\d{4}"
        })
        yield* guardrails.create(OTHER, { name: "ssn", rule_type: "blocked_pattern", pattern: "codes" })
        const listed = yield* guardrails.list(ORG)
        assert.deepStrictEqual(listed.map((r) => [r.name, r.rule_type, r.action, r.priority, r.enabled, r.compiles]), [
          ["mentions-codes", "blocked_pattern", "flag", 5, true, true],
          ["ssn", "pii_redact", "redact", 100, true, true]
        ])
        assert.deepStrictEqual((yield* guardrails.show(ORG, ssn.uuid)).pattern, "\\d{3}-\\d{2}-\\d{4}")

        const { body, parsed } = chat("codes 123-45-6789")
        const outcome = yield* guardrails.evaluate(ORG, "chat", body, parsed)
        assert.deepStrictEqual([outcome.decision, outcome.rules, outcome.redactions], [
          "redact",
          ["mentions-codes", "ssn"],
          1
        ])
        assert.strictEqual(JSON.parse(Buffer.from(outcome.body!).toString()).messages[0].content, "codes [REDACTED]")
        const other = yield* guardrails.evaluate(OTHER, "chat", body, parsed)
        assert.deepStrictEqual([other.decision, other.blockedBy], ["block", "ssn"])

        // Writes apply at once in this process: the compiled set is keyed by the rule-set version.
        yield* guardrails.setEnabled(ORG, ssn.uuid, false)
        assert.strictEqual((yield* guardrails.evaluate(ORG, "chat", body, parsed)).decision, "flag")
        yield* guardrails.update(ORG, flag.uuid, { action: "block" })
        assert.strictEqual((yield* guardrails.evaluate(ORG, "chat", body, parsed)).blockedBy, "mentions-codes")
        yield* guardrails.remove(ORG, flag.uuid)
        assert.strictEqual((yield* guardrails.evaluate(ORG, "chat", body, parsed)).decision, "allow")
        const gone = yield* Effect.flip(guardrails.show(ORG, flag.uuid))
        assert.strictEqual(gone.reason._tag, "GuardrailRuleNotFound")
      }))

    it.effect("refuses a pattern that does not compile and stores nothing", () =>
      Effect.gen(function*() {
        const guardrails = yield* Guardrails
        const org = "8a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
        const refused = yield* Effect.flip(
          guardrails.create(org, { name: "lookbehind", rule_type: "blocked_pattern", pattern: "(?<=a)b" })
        )
        assert.strictEqual(refused.status, 400)
        assert.strictEqual(refused.message, "pattern does not compile: invalid perl operator: (?<=")
        assert.lengthOf(yield* guardrails.list(org), 0)
      }))

    it.effect("a directly written pattern that does not compile is listed compiles: false and skipped", () =>
      Effect.gen(function*() {
        const guardrails = yield* Guardrails
        const sql = yield* SqlClient.SqlClient
        const org = "9b1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
        yield* guardrails.create(org, {
          name: "flag-hello",
          rule_type: "blocked_pattern",
          action: "flag",
          pattern: "hello"
        })
        const { body, parsed } = chat("xhello")
        assert.strictEqual((yield* guardrails.evaluate(org, "chat", body, parsed)).decision, "flag")
        yield* sql`INSERT INTO guardrail_rules (uuid, org_uuid, name, rule_type, action, priority, pattern)
          VALUES ('11111111-2222-4333-8444-555555555555', ${org}::uuid, 'broken', 'blocked_pattern', 'block', 1,
            '(?<=x)hello')`
        // The trigger bumped the version: once this process re-checks (a lost invalidation is caught by the TTL), it reloads.
        yield* guardrails.invalidate(org)
        const outcome = yield* guardrails.evaluate(org, "chat", body, parsed)
        assert.deepStrictEqual([outcome.decision, outcome.rules], ["flag", ["flag-hello"]])
        const broken = (yield* guardrails.list(org)).find((r) => r.name === "broken")!
        assert.deepStrictEqual([broken.enabled, broken.compiles, broken.pattern], [true, false, "(?<=x)hello"])
      }))

    it.effect("concurrent writes keep the cap and unique names: the checks and the write are one step", () =>
      Effect.gen(function*() {
        const guardrails = yield* Guardrails
        const org = "7c1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
        const outcomes = yield* Effect.all(
          Array.from(
            { length: MAX_RULES_PER_ORG + 20 },
            (_, i) =>
              Effect.exit(
                guardrails.create(org, { name: `rule-${i}`, rule_type: "blocked_pattern", pattern: `w${i}x` })
              )
          ),
          { concurrency: "unbounded" }
        )
        const refused = outcomes.filter(Exit.isFailure).map((exit) => Cause.squash(exit.cause))
        assert.strictEqual(outcomes.filter(Exit.isSuccess).length, MAX_RULES_PER_ORG)
        assert.deepStrictEqual(
          [...new Set(refused.map((e) => (e as GuardrailError).message))],
          [`an organization has at most ${MAX_RULES_PER_ORG} guardrail rules`]
        )
        assert.lengthOf(yield* guardrails.list(org), MAX_RULES_PER_ORG)

        // One name asked for by many at once: one rule, the others the named 400 (was the constraint's 500).
        const named = "9d1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
        const same = yield* Effect.all(
          Array.from(
            { length: 8 },
            () => Effect.exit(guardrails.create(named, { name: "same", rule_type: "blocked_pattern", pattern: "x" }))
          ),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(same.filter(Exit.isSuccess).length, 1)
        for (const exit of same.filter(Exit.isFailure)) {
          const error = Cause.squash(exit.cause) as GuardrailError
          assert.deepStrictEqual([error.status, error.message], [400, `a guardrail rule named "same" already exists`])
        }
        const a = yield* guardrails.create(named, { name: "a", rule_type: "blocked_pattern", pattern: "a" })
        const b = yield* guardrails.create(named, { name: "b", rule_type: "blocked_pattern", pattern: "b" })
        const renamed = yield* Effect.all(
          [a, b].map((rule) => Effect.exit(guardrails.update(named, rule.uuid, { name: "c" }))),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(renamed.filter(Exit.isSuccess).length, 1)
        assert.deepStrictEqual(
          (yield* guardrails.list(named)).map((r) => r.name).sort(),
          ["a", "b", "c", "same"].filter((n) => n !== (renamed[0]!._tag === "Success" ? "a" : "b"))
        )
      }))

    it.effect("an enable racing an update keeps both changes; two removals of one rule remove it once", () =>
      Effect.gen(function*() {
        const guardrails = yield* Guardrails
        const org = "6e1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
        for (let trial = 0; trial < 20; trial++) {
          const rule = yield* guardrails.create(org, { name: `r${trial}`, rule_type: "blocked_pattern", pattern: "x" })
          yield* Effect.all([
            guardrails.update(org, rule.uuid, { priority: 7, name: `renamed${trial}` }),
            guardrails.setEnabled(org, rule.uuid, false)
          ], { concurrency: "unbounded" })
          const after = yield* guardrails.show(org, rule.uuid)
          assert.deepStrictEqual([after.name, after.priority, after.enabled], [`renamed${trial}`, 7, false])

          const removals = yield* Effect.all(
            [0, 1].map(() => Effect.exit(guardrails.remove(org, rule.uuid))),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(removals.filter(Exit.isSuccess).length, 1)
          const refused = Cause.squash(
            (removals.find(Exit.isFailure) as Exit.Failure<void, GuardrailError>).cause
          ) as GuardrailError
          assert.strictEqual(refused.reason._tag, "GuardrailRuleNotFound")
        }
      }))
  })
})
