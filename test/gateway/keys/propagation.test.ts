import { PgClient } from "@effect/sql-pg"
import { assert, describe, layer } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Redacted } from "effect"
import { ServiceKeys } from "../../../src/gateway/ServiceKeys.ts"
import { Organizations } from "../../../src/orgs/Organizations.ts"
import { ProviderKeys } from "../../../src/vault/ProviderKeys.ts"
import { PostgresTest } from "../../support/database.ts"
import { SecretBoxTest } from "../../support/secrets.ts"

const TTL_MS = 1500

/** One gateway "process": its own caches, over the shared database. */
const gatewayProcess = Effect.gen(function*() {
  const context = yield* Layer.build(Layer.fresh(
    Layer.merge(ServiceKeys.layer, ProviderKeys.layer).pipe(
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ VDB_GATEWAY_KEY_CACHE_TTL: `${TTL_MS} millis` })))
    )
  ))
  return { keys: Context.get(context, ServiceKeys), vault: Context.get(context, ProviderKeys) }
})

const Shared = Organizations.layer.pipe(Layer.provideMerge(Layer.merge(PostgresTest, SecretBoxTest)))

/** Polls until `check` holds; returns how long it took. */
const eventually = (check: Effect.Effect<boolean, unknown>, limitMs: number) =>
  Effect.gen(function*() {
    const start = Date.now()
    while (!(yield* check)) {
      if (Date.now() - start > limitMs) return assert.fail(`not propagated within ${limitMs} ms`)
      yield* Effect.sleep("50 millis")
    }
    return Date.now() - start
  })

describe("key changes between gateway processes (postgresql)", () => {
  layer(Shared, { excludeTestServices: true })((it) => {
    it.effect("a rotation or deactivation elsewhere reaches a process within its cache TTL", () =>
      Effect.gen(function*() {
        const orgs = yield* Organizations
        const a = yield* gatewayProcess
        const b = yield* gatewayProcess
        const org = yield* orgs.create({ name: "two-processes" })
        const first = yield* a.keys.issue(org.uuid)
        assert.strictEqual(yield* b.keys.verify(org.uuid, first.key), "valid")

        const second = yield* a.keys.issue(org.uuid)
        // The process that rotated applies it at once...
        assert.strictEqual(yield* a.keys.verify(org.uuid, first.key), "invalid")
        assert.strictEqual(yield* a.keys.verify(org.uuid, second.key), "valid")
        // ...the other keeps its cached view (no database round trip) until the TTL runs out.
        assert.strictEqual(yield* b.keys.verify(org.uuid, first.key), "valid")
        const took = yield* eventually(Effect.map(b.keys.verify(org.uuid, first.key), (r) => r === "invalid"), TTL_MS + 1000)
        assert.isAtMost(took, TTL_MS + 500)
        assert.strictEqual(yield* b.keys.verify(org.uuid, second.key), "valid")

        yield* orgs.setActive(org.uuid, false)
        yield* eventually(Effect.map(b.keys.verify(org.uuid, second.key), (r) => r === "invalid"), TTL_MS + 1000)
        yield* eventually(Effect.map(a.keys.verify(org.uuid, second.key), (r) => r === "invalid"), TTL_MS + 1000)
      }).pipe(Effect.scoped), { timeout: 20_000 })

    it.effect("a provider key set or removed elsewhere reaches a process within its cache TTL", () =>
      Effect.gen(function*() {
        const orgs = yield* Organizations
        const a = yield* gatewayProcess
        const b = yield* gatewayProcess
        const org = yield* orgs.create({ name: "vault-two-processes" })
        const read = (p: typeof a) =>
          p.vault.get(org.uuid, "openai").pipe(
            Effect.map(Redacted.value),
            Effect.catchTag("ProviderKeyMissing", () => Effect.succeed("missing"))
          )
        assert.strictEqual(yield* read(b), "missing")
        yield* a.vault.set(org.uuid, "openai", Redacted.make("sk-one"))
        assert.strictEqual(yield* read(a), "sk-one")
        assert.strictEqual(yield* read(b), "missing")
        yield* eventually(Effect.map(read(b), (k) => k === "sk-one"), TTL_MS + 1000)

        yield* a.vault.set(org.uuid, "openai", Redacted.make("sk-two"))
        assert.strictEqual(yield* read(a), "sk-two")
        yield* eventually(Effect.map(read(b), (k) => k === "sk-two"), TTL_MS + 1000)

        yield* a.vault.remove(org.uuid, "openai")
        assert.strictEqual(yield* read(a), "missing")
        yield* eventually(Effect.map(read(b), (k) => k === "missing"), TTL_MS + 1000)
      }).pipe(Effect.scoped), { timeout: 20_000 })
  })
})

/** A database that cannot be reached: nothing listens on port 1. */
const Unreachable = Layer.mergeAll(ServiceKeys.layer, ProviderKeys.layer).pipe(
  Layer.provideMerge(Organizations.layer),
  Layer.provideMerge(Layer.merge(
    PgClient.layer({ url: Redacted.make("postgres://postgres@127.0.0.1:1/vdb"), connectTimeout: "2 seconds" }),
    SecretBoxTest
  ))
)

describe("fail closed when the database is unreachable", () => {
  layer(Unreachable, { excludeTestServices: true })((it) => {
    it.effect("verification and provider-key reads fail with BackendUnavailable, never a pass", () =>
      Effect.gen(function*() {
        const keys = yield* ServiceKeys
        const vault = yield* ProviderKeys
        const org = "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"
        const key = "vdb_sk_" + "A".repeat(43)
        const auth = yield* Effect.flip(keys.verify(org, key))
        assert.strictEqual(auth._tag, "BackendUnavailable")
        assert.strictEqual(auth.backend, "authentication")
        // Not cached: the next request tries the database again and fails again.
        assert.strictEqual((yield* Effect.flip(keys.verify(org, key)))._tag, "BackendUnavailable")
        const provider = yield* Effect.flip(vault.get(org, "openai"))
        assert.strictEqual(provider._tag, "BackendUnavailable")
        assert.strictEqual(provider._tag === "BackendUnavailable" && provider.backend, "provider")
        // Shape failures need no database and stay 401.
        assert.strictEqual(yield* keys.verify(org, "sk-not-ours"), "invalid")
      }))
  })
})
