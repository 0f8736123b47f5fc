import { assert, describe, it, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { ResponseCache } from "../../src/api/ResponseCache.ts"
import { makeBackendCache } from "../../src/cache/BackendCache.ts"
import { BackendUnavailable } from "../../src/cache/BackendUnavailable.ts"
import { Invalidation } from "../../src/db/Invalidation.ts"
import type { InvalidationBus } from "../../src/db/InvalidationBus.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { SqlBackends } from "../support/database.ts"
import { SecretBoxTest } from "../support/secrets.ts"

/**
 * While the invalidation bus is not live (a process's listening session is lost and reconnecting,
 * so nobody waits for it and it would miss changes), the caches neither serve nor keep entries:
 * every request reads. The bus here is an in-process one whose liveness the test sets, and the
 * changes are written behind the caches' backs, as another process's would go unheard.
 */
let live = true

const flagged = Layer.effect(
  Invalidation,
  Effect.gen(function*() {
    const inner = yield* Invalidation
    return { ...inner, live: () => live } satisfies InvalidationBus
  })
).pipe(Layer.provide(Invalidation.layerMemory))

describe("caches while the invalidation bus is not live", () => {
  it.effect("the response cache serves and keeps nothing", () =>
    Effect.gen(function*() {
      let flag = false
      const { service: cache } = yield* ResponseCache.make(5_000, () => flag)
      let builds = 0
      const build = Effect.sync(() => {
        builds++
        return { value: "answer", bytes: 10, dependsOn: ["CVE-1"] }
      })
      yield* cache.serve("k", build)
      yield* cache.serve("k", build)
      assert.isUndefined(cache.peek("k"))
      assert.strictEqual(builds, 2)
      flag = true
      yield* cache.serve("k", build)
      assert.isTrue((yield* cache.serve("k", build)).hit)
      assert.strictEqual(builds, 3)
      flag = false
      assert.isUndefined(cache.peek("k"))
    }))

  it.effect("a backend cache reads every time", () =>
    Effect.gen(function*() {
      let flag = false
      let reads = 0
      const local = yield* Invalidation
      const cache = yield* makeBackendCache({
        what: "test",
        read: () => Effect.sync(() => ++reads),
        unavailable: new BackendUnavailable({ backend: "authentication" }),
        ttl: Duration.minutes(1),
        bus: { ...local, live: () => flag },
        channels: ["service-key"]
      })
      assert.deepStrictEqual([yield* cache.get("a"), yield* cache.get("a")], [1, 2])
      flag = true
      assert.deepStrictEqual([yield* cache.get("a"), yield* cache.get("a")], [3, 3])
      flag = false
      assert.strictEqual(yield* cache.get("a"), 4)
    }).pipe(Effect.scoped, Effect.provide(Invalidation.layerMemory)))
})

describe.each(SqlBackends)("organizations while the bus is not live ($name)", ({ layer: database }) => {
  layer(Organizations.layer.pipe(Layer.provideMerge(Layer.mergeAll(database, SecretBoxTest, flagged))), {
    excludeTestServices: true
  })((it) => {
    it.effect("a deactivation no process heard is seen at once, and what was read meanwhile is not kept", () =>
      Effect.gen(function*() {
        const orgs = yield* Organizations
        const sql = yield* SqlClient.SqlClient
        const deactivate = (uuid: string) => sql`UPDATE organizations SET is_active = false WHERE uuid = ${uuid}::uuid`
        live = true
        const cached = yield* orgs.create({ name: "cached" })
        assert.isTrue((yield* orgs.secretOf(cached.uuid)).org.isActive)
        yield* deactivate(cached.uuid)
        // Live: the change was not published, so the cached entry still answers (what the bus is for).
        assert.isTrue((yield* orgs.secretOf(cached.uuid)).org.isActive)
        live = false
        assert.isFalse((yield* orgs.secretOf(cached.uuid)).org.isActive)

        const meanwhile = yield* orgs.create({ name: "read-while-not-live" })
        assert.isTrue((yield* orgs.secretOf(meanwhile.uuid)).org.isActive)
        yield* deactivate(meanwhile.uuid)
        live = true
        assert.isFalse((yield* orgs.secretOf(meanwhile.uuid)).org.isActive)
      }))
  })
})
