import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import { afterAll, afterEach, beforeAll } from "vitest"
import { layerPostgres } from "../../../src/db/Database.ts"
import { Invalidation } from "../../../src/db/Invalidation.ts"
import { MigrationsLayer } from "../../../src/db/Migrations.ts"
import { UpstreamClient } from "../../../src/http/UpstreamClient.ts"
import { KiroTokens } from "../../../src/providers/kiro/KiroTokens.ts"
import { MasterKey } from "../../../src/secrets/MasterKey.ts"
import { SecretBox } from "../../../src/secrets/SecretBox.ts"
import { ProviderKeys } from "../../../src/vault/ProviderKeys.ts"
import { throwawayDatabase } from "../../support/database.ts"
import { type FakeKiro, startFakeKiro } from "./FakeKiro.ts"

/**
 * One Kiro sign-in used by two gateway processes at once (two token caches over one vault). The
 * provider rotates the refresh token at every refresh and refuses one used before, as a rotating
 * sign-in service does: a process that refreshed with a token the other had just used would fail,
 * and one that refreshed whenever it saw the other's write would refresh on every request.
 */

const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"
const signIn = JSON.stringify({ refreshToken: "first-refresh-token", authMethod: "social" })

let kiro: FakeKiro
beforeAll(async () => {
  kiro = await startFakeKiro()
})
afterEach(() => kiro.reset())
afterAll(() => kiro.close())

/** Rotates at every refresh and refuses a refresh token used before; tokens live `seconds`. */
const rotating = (seconds: number) => {
  const used = new Set<string>()
  kiro.auth = (n, body) => {
    if (used.has(body.refreshToken)) return { status: 400, body: { error: "invalid_grant" } }
    used.add(body.refreshToken)
    return { status: 200, body: { accessToken: `access-token-${n}`, expiresIn: seconds, refreshToken: `rotated-${n}` } }
  }
}

const endpoints = () => ({ social: new URL(`${kiro.url}/refreshToken`), idc: new URL(`${kiro.url}/token`) })
const upstream = UpstreamClient.layerWith({ timeout: "10 seconds" })

interface Process {
  readonly tokens: KiroTokens["Service"]
  readonly vault: ProviderKeys["Service"]
  /** Sessions of this database sitting in an open transaction (PostgreSQL only). */
  readonly inTransaction?: Effect.Effect<number>
}

/** Two processes in one: two token caches over one in-memory vault. */
const inMemory = Effect.gen(function*() {
  const context = yield* Layer.build(
    Layer.mergeAll(ProviderKeys.layerMemory, upstream).pipe(
      // One bus, as one database would give both.
      Layer.provideMerge(Invalidation.layerMemory),
      Layer.provide(SecretBox.layer),
      Layer.provide(Layer.succeed(MasterKey, MasterKey.fromBytes(randomBytes(32))))
    )
  )
  const make = () =>
    Effect.map(Effect.provide(KiroTokens.makeWith(endpoints()), context), (tokens): Process => ({
      tokens,
      vault: Context.get(context, ProviderKeys)
    }))
  return [yield* make(), yield* make()] as const
})

/** Two processes on one PostgreSQL database: each its own pool, listening session, vault cache and token cache. */
const onPostgres = Effect.gen(function*() {
  const db = yield* throwawayDatabase
  const masterKey = randomBytes(32)
  const make = () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(
        Layer.mergeAll(ProviderKeys.layer, upstream).pipe(
          Layer.provideMerge(MigrationsLayer),
          Layer.provide(SecretBox.layer),
          Layer.provide(Layer.succeed(MasterKey, MasterKey.fromBytes(masterKey))),
          Layer.provideMerge(layerPostgres(Redacted.make(db.url), 2)),
          Layer.orDie
        )
      )
      const tokens = yield* Effect.provide(KiroTokens.makeWith(endpoints()), context)
      const sql = Context.get(context, SqlClient.SqlClient)
      const inTransaction = sql<{ readonly n: number }>`
        SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`
        .pipe(
          Effect.map((rows) => rows[0]!.n),
          Effect.orDie
        )
      return { tokens, vault: Context.get(context, ProviderKeys), inTransaction } satisfies Process
    })
  // One after the other: the first migrates the database.
  return [yield* make(), yield* make()] as const
})

const token = (process: Process) => Effect.map(process.tokens.access(ORG), (access) => Redacted.value(access.token))

describe.each([
  { name: "in memory", processes: inMemory },
  { name: "on PostgreSQL", processes: onPostgres }
])("KiroTokens in two processes, $name", ({ processes }) => {
  it.live(
    "requests alternating between them make one refresh: each uses the token the other stored",
    () =>
      Effect.gen(function*() {
        rotating(3600)
        const [a, b] = yield* processes
        yield* a.vault.set(ORG, "kiro", Redacted.make(signIn))
        assert.strictEqual(yield* token(a), "access-token-1")
        for (let i = 0; i < 5; i++) {
          assert.strictEqual(yield* token(b), "access-token-1")
          assert.strictEqual(yield* token(a), "access-token-1")
        }
        assert.strictEqual(kiro.refreshes.length, 1)
        // The rotated refresh token is what the vault holds, with the token both use.
        const stored = JSON.parse(Redacted.value(yield* b.vault.get(ORG, "kiro")))
        assert.strictEqual(stored.refreshToken, "rotated-1")
        assert.strictEqual(stored.accessToken, "access-token-1")
      }).pipe(Effect.scoped),
    30_000
  )

  it.live(
    "when the token is due, the two make one refresh between them, and both use its token",
    () =>
      Effect.gen(function*() {
        // Refreshed at half a 4 s life.
        rotating(4)
        const [a, b] = yield* processes
        yield* a.vault.set(ORG, "kiro", Redacted.make(signIn))
        assert.strictEqual(yield* token(a), "access-token-1")
        assert.strictEqual(yield* token(b), "access-token-1")
        yield* Effect.sleep("2500 millis")
        const open = kiro.hold()
        const both = yield* Effect.forkChild(Effect.all([token(a), token(b)], { concurrency: "unbounded" }))
        // Both are asking (one at the sign-in service, the other waiting for it); then it answers.
        while (kiro.refreshes.length < 2) yield* Effect.sleep("5 millis")
        yield* Effect.sleep("100 millis")
        // Waiting on the network holds no database session: a pool held by slow refreshes stalls every request.
        if (a.inTransaction !== undefined) assert.strictEqual(yield* a.inTransaction, 0)
        open()
        assert.deepStrictEqual(yield* Fiber.join(both), ["access-token-2", "access-token-2"])
        assert.strictEqual(kiro.refreshes.length, 2)
        assert.deepStrictEqual(kiro.refreshes.map((r) => JSON.parse(r.body.toString()).refreshToken), [
          "first-refresh-token",
          "rotated-1"
        ])
      }).pipe(Effect.scoped),
    30_000
  )

  /** A refresh held at the sign-in service while `during` runs, then answered; what the request got. */
  const duringRefresh = (a: Process, during: Effect.Effect<void>) =>
    Effect.gen(function*() {
      const open = kiro.hold()
      const asked = kiro.refreshes.length
      const request = yield* Effect.forkChild(token(a))
      while (kiro.refreshes.length === asked) yield* Effect.sleep("5 millis")
      yield* during
      open()
      kiro.gate = undefined
      return yield* Fiber.join(request)
    })

  it.live(
    "a request waiting for the lease uses the token another request of its process took meanwhile",
    () =>
      Effect.gen(function*() {
        rotating(3600)
        const [a, b] = yield* processes
        yield* a.vault.set(ORG, "kiro", Redacted.make(signIn))
        const open = kiro.hold()
        const first = yield* Effect.forkChild(token(a))
        while (kiro.refreshes.length === 0) yield* Effect.sleep("5 millis")
        // b's request finds the lease held and waits for it.
        const waiting = yield* Effect.forkChild(token(b))
        yield* Effect.sleep("150 millis")
        open()
        assert.strictEqual(yield* Fiber.join(first), "access-token-1")
        // Another request on b, before the waiting one looks again: it takes the token a stored.
        assert.strictEqual(yield* token(b), "access-token-1")
        // Before: the waiting request then refreshed with the refresh token it had read, which a had spent (400).
        assert.strictEqual(yield* Fiber.join(waiting), "access-token-1")
        assert.strictEqual(kiro.refreshes.length, 1)
      }).pipe(Effect.scoped),
    30_000
  )

  it.live(
    "a sign-in deleted during a refresh stays deleted: the write-back does not bring it back",
    () =>
      Effect.gen(function*() {
        rotating(3600)
        const [a, b] = yield* processes
        yield* a.vault.set(ORG, "kiro", Redacted.make(signIn))
        // The request under way gets the token it waited for.
        assert.strictEqual(yield* duringRefresh(a, Effect.asVoid(b.vault.remove(ORG, "kiro"))), "access-token-1")
        assert.strictEqual((yield* Effect.flip(b.vault.get(ORG, "kiro")))._tag, "ProviderKeyMissing")
        assert.strictEqual((yield* Effect.flip(a.tokens.access(ORG)))._tag, "ProviderKeyMissing")
        assert.strictEqual((yield* Effect.flip(b.tokens.access(ORG)))._tag, "ProviderKeyMissing")
      }).pipe(Effect.scoped),
    30_000
  )

  it.live("a sign-in replaced during a refresh is the one used next, on both", () =>
    Effect.gen(function*() {
      rotating(3600)
      const [a, b] = yield* processes
      yield* a.vault.set(ORG, "kiro", Redacted.make(signIn))
      const replacement = JSON.stringify({ refreshToken: "replacement-refresh-token", authMethod: "social" })
      yield* duringRefresh(a, b.vault.set(ORG, "kiro", Redacted.make(replacement)))
      assert.strictEqual(
        JSON.parse(Redacted.value(yield* a.vault.get(ORG, "kiro"))).refreshToken,
        "replacement-refresh-token"
      )
      assert.strictEqual(yield* token(b), "access-token-2")
      assert.strictEqual(yield* token(a), "access-token-2")
      assert.deepStrictEqual(kiro.refreshes.map((r) => JSON.parse(r.body.toString()).refreshToken), [
        "first-refresh-token",
        "replacement-refresh-token"
      ])
    }).pipe(Effect.scoped), 30_000)
})
