import { assert, describe, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { RateLimiter } from "../../src/ratelimit/RateLimiter.ts"
import { PgliteTest, PostgresTest } from "../support/database.ts"

// One statement decides every request of an organization that waited for the statement before it
// (src/ratelimit/RateLimiter.ts). These check that a group's answers are the ones the requests would
// have got one at a time, in arrival order, and that a request gone before its group is not counted.

const ORG = "00000000-0000-4000-8000-000000000001"

const concurrentConsumes = Effect.gen(function*() {
  const limiter = yield* RateLimiter
  const limits = { perMinute: 0, perWeek: 25 }
  const decisions = yield* Effect.forEach(
    Array.from({ length: 60 }),
    () => limiter.consume(ORG, limits),
    { concurrency: "unbounded" }
  )
  const admitted = decisions.filter((d) => d.admitted)
  const refused = decisions.filter((d) => !d.admitted)
  assert.strictEqual(admitted.length, 25)
  // Each admitted request saw the count with itself included: 1, 2, … 25, each once.
  assert.deepStrictEqual(
    admitted.map((d) => d.week.used).sort((a, b) => a - b),
    Array.from({ length: 25 }, (_, i) => i + 1)
  )
  assert.deepStrictEqual(
    admitted.map((d) => d.minute.used).sort((a, b) => a - b),
    Array.from({ length: 25 }, (_, i) => i + 1)
  )
  for (const d of refused) {
    assert.strictEqual(d.week.used, 25)
    assert.strictEqual(d.week.limit, 25)
  }
  const after = yield* limiter.peek(ORG, limits)
  assert.strictEqual(after.week.used, 25)
  // A later lone request is decided on its own and refused.
  assert.isFalse((yield* limiter.consume(ORG, limits)).admitted)
})

describe("rate limiter: one statement a group", () => {
  layer(RateLimiter.layer.pipe(Layer.provideMerge(PostgresTest)), { timeout: 60_000, excludeTestServices: true })(
    (it) => {
      it.effect("PostgreSQL: 60 concurrent requests, limit 25: exactly 25 admitted, counted 1..25 as one at a time", () =>
        concurrentConsumes)

      it.effect("a request that goes away while it waits for its group is not counted", () =>
        Effect.gen(function*() {
          const limiter = yield* RateLimiter
          const sql = yield* SqlClient.SqlClient
          const org = "00000000-0000-4000-8000-000000000002"
          const limits = { perMinute: 100, perWeek: 0 }
          assert.strictEqual((yield* limiter.consume(org, limits)).minute.used, 1)
          // Hold the organization's row, so the next statement waits for the lock in PostgreSQL.
          const locked = yield* Deferred.make<void>()
          const release = yield* Deferred.make<void>()
          const holder = yield* sql.withTransaction(Effect.gen(function*() {
            yield* sql`SELECT 1 FROM rate_counters WHERE org_uuid = ${org}::uuid FOR UPDATE`
            yield* Deferred.succeed(locked, undefined)
            yield* Deferred.await(release)
          })).pipe(Effect.forkChild)
          yield* Deferred.await(locked)
          const first = yield* limiter.consume(org, limits).pipe(Effect.forkChild)
          // `first`'s statement is now waiting for the lock; `second` waits for the next group.
          yield* Effect.sleep("200 millis")
          const second = yield* limiter.consume(org, limits).pipe(Effect.forkChild)
          yield* Effect.sleep("50 millis")
          yield* Fiber.interrupt(second)
          yield* Deferred.succeed(release, undefined)
          yield* Fiber.join(holder)
          const decided = yield* Fiber.join(first)
          assert.isTrue(decided.admitted)
          assert.strictEqual(decided.minute.used, 2)
          assert.strictEqual((yield* limiter.peek(org, limits)).minute.used, 2)
          // The queue is free again: the next request is decided and counted.
          assert.strictEqual((yield* limiter.consume(org, limits)).minute.used, 3)
        }))
    }
  )

  layer(RateLimiter.layer.pipe(Layer.provideMerge(PgliteTest)), { timeout: 60_000 })((it) => {
    it.effect("embedded database: the same", () => concurrentConsumes)
  })
})
