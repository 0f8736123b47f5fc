import { PgClient } from "@effect/sql-pg"
import { assert, describe, layer } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Redacted } from "effect"
import { layerPostgres } from "../../../src/db/Database.ts"
import { Invalidation } from "../../../src/db/Invalidation.ts"
import { MigrationsLayer } from "../../../src/db/Migrations.ts"
import { Organizations } from "../../../src/orgs/Organizations.ts"
import { SecretBox } from "../../../src/secrets/SecretBox.ts"
import { ServiceKeys } from "../../../src/servicekeys/ServiceKeys.ts"
import { ProviderKeys } from "../../../src/vault/ProviderKeys.ts"
import { adminQuery, throwawayDatabase } from "../../support/database.ts"
import { SecretBoxTest } from "../../support/secrets.ts"

/** Far longer than any test here: whatever propagates, propagates without the TTL. */
const TTL = "60 seconds"

/**
 * One gateway "process": its own pool, its own LISTEN session and its own
 * caches, over the shared database and master key.
 */
const gatewayProcess = (url: string) =>
  Effect.gen(function*() {
    const box = yield* SecretBox
    const context = yield* Layer.build(
      Layer.mergeAll(ServiceKeys.layer, ProviderKeys.layer).pipe(
        Layer.provideMerge(Organizations.layer),
        Layer.provideMerge(layerPostgres(Redacted.make(url), 2)),
        Layer.provide(Layer.succeed(SecretBox, box)),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ VDB_GATEWAY_KEY_CACHE_TTL: TTL }))),
        Layer.orDie
      )
    )
    return {
      orgs: Context.get(context, Organizations),
      keys: Context.get(context, ServiceKeys),
      vault: Context.get(context, ProviderKeys)
    }
  })

/** A migrated throwaway database that two "processes" open independently. */
const sharedDatabase = Effect.gen(function*() {
  const db = yield* throwawayDatabase
  yield* Layer.build(MigrationsLayer.pipe(Layer.provide(layerPostgres(Redacted.make(db.url), 1)), Layer.orDie))
  return db
})

/** Polls until `check` holds; NOTIFY reaches another session asynchronously, in milliseconds. */
const eventually = (check: Effect.Effect<boolean, unknown>, limitMs = 1000) =>
  Effect.gen(function*() {
    const start = Date.now()
    while (!(yield* check)) {
      if (Date.now() - start > limitMs) return assert.fail(`not propagated within ${limitMs} ms`)
      yield* Effect.sleep("10 millis")
    }
    return Date.now() - start
  })

describe("key changes between gateway processes (postgresql, LISTEN/NOTIFY)", () => {
  layer(SecretBoxTest, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("a rotation or deactivation on one process reaches the other at once, not after the TTL", () =>
      Effect.gen(function*() {
        const db = yield* sharedDatabase
        const a = yield* gatewayProcess(db.url)
        const b = yield* gatewayProcess(db.url)
        const org = yield* a.orgs.create({ name: "two-processes" })
        const first = yield* a.keys.issue(org.uuid)
        assert.strictEqual(yield* b.keys.verify(org.uuid, first.key), "valid")

        const second = yield* a.keys.issue(org.uuid)
        // The process that rotated applies it before `issue` returns...
        assert.strictEqual(yield* a.keys.verify(org.uuid, first.key), "invalid")
        // ...and the other drops its cached state as soon as the notification lands.
        yield* eventually(Effect.map(b.keys.verify(org.uuid, first.key), (r) => r === "invalid"))
        assert.strictEqual(yield* b.keys.verify(org.uuid, second.key), "valid")

        yield* a.orgs.setActive(org.uuid, false)
        assert.strictEqual(yield* a.keys.verify(org.uuid, second.key), "invalid")
        yield* eventually(Effect.map(b.keys.verify(org.uuid, second.key), (r) => r === "invalid"))
        yield* b.orgs.setActive(org.uuid, true)
        yield* eventually(Effect.map(a.keys.verify(org.uuid, second.key), (r) => r === "valid"))
      }).pipe(Effect.scoped))

    it.effect("a provider key set or removed on one process reaches the other at once", () =>
      Effect.gen(function*() {
        const db = yield* sharedDatabase
        const a = yield* gatewayProcess(db.url)
        const b = yield* gatewayProcess(db.url)
        const org = yield* a.orgs.create({ name: "vault-two-processes" })
        const read = (p: typeof a) =>
          p.vault.get(org.uuid, "openai").pipe(
            Effect.map(Redacted.value),
            Effect.catchTag("ProviderKeyMissing", () => Effect.succeed("missing"))
          )
        assert.strictEqual(yield* read(b), "missing")
        yield* a.vault.set(org.uuid, "openai", Redacted.make("sk-one"))
        assert.strictEqual(yield* read(a), "sk-one")
        yield* eventually(Effect.map(read(b), (k) => k === "sk-one"))

        yield* a.vault.set(org.uuid, "openai", Redacted.make("sk-two"))
        assert.strictEqual(yield* read(a), "sk-two")
        yield* eventually(Effect.map(read(b), (k) => k === "sk-two"))

        yield* a.vault.remove(org.uuid, "openai")
        assert.strictEqual(yield* read(a), "missing")
        yield* eventually(Effect.map(read(b), (k) => k === "missing"))
      }).pipe(Effect.scoped))

    it.effect("after its LISTEN session is lost, a process drops every cached entry once it is back", () =>
      Effect.gen(function*() {
        const db = yield* sharedDatabase
        const b = yield* gatewayProcess(db.url)
        const org = yield* b.orgs.create({ name: "lost-notification" })
        const { key } = yield* b.keys.issue(org.uuid)
        assert.strictEqual(yield* b.keys.verify(org.uuid, key), "valid")

        // A change nobody is told about (as if its notification were lost while
        // the session was down), then the listening session dies.
        yield* adminQuery(db.url, `UPDATE gateway_service_keys SET verifier = repeat('0', 64)`)
        assert.strictEqual(yield* b.keys.verify(org.uuid, key), "valid")
        yield* adminQuery(
          db.url,
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'LISTEN%'`
        )
        yield* eventually(Effect.map(b.keys.verify(org.uuid, key), (r) => r === "invalid"), 5000)
      }).pipe(Effect.scoped))
  })
})

/** A database that cannot be reached: nothing listens on port 1. */
const Unreachable = Layer.mergeAll(ServiceKeys.layer, ProviderKeys.layer).pipe(
  Layer.provideMerge(Organizations.layer),
  Layer.provideMerge(Layer.mergeAll(
    PgClient.layer({ url: Redacted.make("postgres://postgres@127.0.0.1:1/vdb"), connectTimeout: "2 seconds" }),
    SecretBoxTest,
    Invalidation.layerMemory
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
