import { assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Invalidation } from "../../src/db/Invalidation.ts"
import { Policies } from "../../src/policies/Policies.ts"
import { admits } from "../../src/policies/PolicySnapshot.ts"
import { PostgresTest, SqlBackends } from "../support/database.ts"

const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"
const OTHER = "0b0e6d8a-1111-4c5b-8e7f-0a1b2c3d4e5f"

const backends = [
  ...SqlBackends.map(({ layer, name }) => ({ name, layer: Policies.layer.pipe(Layer.provideMerge(layer)) })),
  { name: "memory", layer: Policies.layerMemory.pipe(Layer.provide(Invalidation.layerMemory)) }
]

describe.each(backends)("Policies ($name)", ({ layer: backend }) => {
  layer(backend, { excludeTestServices: true })((it) => {
    it.effect("stores entries per organization, idempotently, and removes them", () =>
      Effect.gen(function*() {
        const policies = yield* Policies
        const deny = yield* policies.add(ORG, { kind: "tool", effect: "deny", value: "shell" })
        const again = yield* policies.add(ORG, { kind: "tool", effect: "deny", value: "shell" })
        assert.strictEqual(again.uuid, deny.uuid)
        const model = yield* policies.add(ORG, { kind: "model", effect: "allow", provider: "OpenAI", value: "gpt-4.1" })
        assert.strictEqual(model.provider, "openai")
        assert.strictEqual(deny.provider, null)
        assert.deepStrictEqual((yield* policies.list(ORG)).map((e) => e.uuid).sort(), [deny.uuid, model.uuid].sort())
        assert.deepStrictEqual(yield* policies.list(OTHER), [])
        // Another organization cannot remove it.
        assert.isTrue(Exit.isFailure(yield* Effect.exit(policies.remove(OTHER, deny.uuid))))
        yield* policies.remove(ORG, deny.uuid)
        yield* policies.remove(ORG, model.uuid)
        assert.deepStrictEqual(yield* policies.list(ORG), [])
        const missing = yield* Effect.flip(policies.remove(ORG, deny.uuid))
        assert.strictEqual(missing.status, 404)
      }))

    it.effect("refuses entries that make no sense", () =>
      Effect.gen(function*() {
        const policies = yield* Policies
        const refused = (entry: Parameters<typeof policies.add>[1]) =>
          Effect.map(Effect.flip(policies.add(ORG, entry)), (e) => e.status)
        assert.strictEqual(yield* refused({ kind: "skill", effect: "strip", value: "x" }), 400)
        assert.strictEqual(yield* refused({ kind: "model", effect: "deny", value: "gpt-4.1" }), 400)
        assert.strictEqual(
          yield* refused({ kind: "provider", effect: "deny", provider: "openai", value: "openai" }),
          400
        )
        assert.strictEqual(yield* refused({ kind: "provider", effect: "deny", value: "Not a slug!" }), 400)
        assert.strictEqual(yield* refused({ kind: "tool", effect: "deny", value: "  " }), 400)
        // An MCP URL that does not parse would match nothing: refused when written, not ignored.
        assert.strictEqual(yield* refused({ kind: "mcp", effect: "deny", value: "https://exa mple/mcp" }), 400)
        assert.strictEqual(yield* refused({ kind: "mcp", effect: "deny", value: "ftp://files.example/mcp" }), 400)
        assert.isTrue(Exit.isFailure(yield* Effect.exit(policies.list("not-a-uuid"))))
      }))

    it.effect("the snapshot follows every change through this instance, with a growing version", () =>
      Effect.gen(function*() {
        const policies = yield* Policies
        const before = yield* policies.snapshot(ORG)
        assert.strictEqual(admits(before.forProvider("openai").models, "gpt-4o"), "ok")
        const entry = yield* policies.add(ORG, { kind: "model", effect: "allow", provider: "openai", value: "gpt-4.1" })
        const allowlist = yield* policies.snapshot(ORG)
        assert.isAbove(allowlist.version, before.version)
        assert.strictEqual(admits(allowlist.forProvider("openai").models, "gpt-4o"), "not_allowed")
        assert.strictEqual(admits(allowlist.forProvider("openai").models, "gpt-4.1"), "ok")
        assert.strictEqual(admits(allowlist.forProvider("groq").models, "gpt-4o"), "ok")
        yield* policies.remove(ORG, entry.uuid)
        const after = yield* policies.snapshot(ORG)
        assert.isAbove(after.version, allowlist.version)
        assert.strictEqual(admits(after.forProvider("openai").models, "gpt-4o"), "ok")
      }))
  })
})

describe("Policies on an unreachable database", () => {
  layer(Policies.layer.pipe(Layer.provideMerge(PostgresTest)), { excludeTestServices: true })((it) => {
    it.effect("fails closed with BackendUnavailable (policy), and recovers", () =>
      Effect.gen(function*() {
        const policies = yield* Policies
        const sql = yield* SqlClient.SqlClient
        yield* sql`ALTER TABLE gateway_policies RENAME TO gateway_policies_away`
        const failure = yield* Effect.flip(policies.snapshot(ORG))
        assert.strictEqual(failure._tag, "BackendUnavailable")
        assert.strictEqual(failure.backend, "policy")
        yield* sql`ALTER TABLE gateway_policies_away RENAME TO gateway_policies`
        // A failed read is not cached.
        assert.strictEqual((yield* policies.snapshot(ORG)).version, 0)
      }))
  })
})
