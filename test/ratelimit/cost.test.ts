import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { RateLimiter } from "../../src/ratelimit/RateLimiter.ts"
import { PgliteTest, PostgresTest } from "../support/database.ts"

// A cost above 1 (a JSON-RPC batch) is decided all or nothing, by its own statement. These run on
// the test clock, which stands still, so every call falls in the same minute and week.

const limitedTo3 = Effect.gen(function*() {
  const limiter = yield* RateLimiter
  const org = "00000000-0000-4000-8000-000000000011"
  const limits = { perMinute: 3, perWeek: 10 }
  const four = yield* limiter.consume(org, limits, 4)
  assert.isFalse(four.admitted)
  assert.strictEqual(four.minute.used, 0)
  assert.strictEqual(four.week.used, 0)
  const three = yield* limiter.consume(org, limits, 3)
  assert.isTrue(three.admitted)
  assert.strictEqual(three.minute.used, 3)
  assert.strictEqual(three.week.used, 3)
  const two = yield* limiter.consume(org, limits, 2)
  assert.isFalse(two.admitted)
  assert.strictEqual(two.week.used, 3)
  assert.isFalse((yield* limiter.consume(org, limits)).admitted)
  assert.strictEqual((yield* limiter.peek(org, limits)).week.used, 3)
})

const partlyFull = Effect.gen(function*() {
  const limiter = yield* RateLimiter
  const org = "00000000-0000-4000-8000-000000000012"
  const limits = { perMinute: 0, perWeek: 5 }
  assert.strictEqual((yield* limiter.consume(org, limits)).week.used, 1)
  // Room for 4: a batch of 5 is not admitted in part.
  const five = yield* limiter.consume(org, limits, 5)
  assert.isFalse(five.admitted)
  assert.strictEqual(five.week.used, 1)
  const four = yield* limiter.consume(org, limits, 4)
  assert.isTrue(four.admitted)
  assert.strictEqual(four.week.used, 5)
})

describe("rate limiter: a cost is admitted whole or not at all", () => {
  layer(RateLimiter.layer.pipe(Layer.provideMerge(PostgresTest)), { timeout: 60_000 })((it) => {
    it.effect("PostgreSQL: limit 3, cost 4 refused and not counted, cost 3 admitted, then nothing fits", () =>
      limitedTo3)
    it.effect("PostgreSQL: a cost larger than the room left is refused whole", () => partlyFull)

    it.effect("PostgreSQL: limits 0/0 admit any cost without touching the database", () =>
      Effect.gen(function*() {
        const limiter = yield* RateLimiter
        const sql = yield* SqlClient.SqlClient
        const org = "00000000-0000-4000-8000-000000000013"
        const decided = yield* limiter.consume(org, { perMinute: 0, perWeek: 0 }, 50)
        assert.isTrue(decided.admitted)
        const rows = yield* sql`SELECT 1 FROM rate_counters WHERE org_uuid = ${org}::uuid`
        assert.strictEqual(rows.length, 0)
      }))

    it.effect("PostgreSQL: batches among concurrent single requests: never over the limit, each batch whole", () =>
      Effect.gen(function*() {
        const limiter = yield* RateLimiter
        const org = "00000000-0000-4000-8000-000000000014"
        const limits = { perMinute: 0, perWeek: 20 }
        const costs = [1, 1, 6, 1, 1, 6, 1, 1, 6, 1, 1, 6]
        const decisions = yield* Effect.forEach(costs, (cost) => limiter.consume(org, limits, cost), {
          concurrency: "unbounded"
        })
        const admitted = costs.reduce((sum, cost, i) => sum + (decisions[i]!.admitted ? cost : 0), 0)
        assert.isAtMost(admitted, 20)
        assert.strictEqual((yield* limiter.peek(org, limits)).week.used, admitted)
        // Whatever was refused did not fit in what the others left.
        for (const [i, cost] of costs.entries()) {
          if (!decisions[i]!.admitted) assert.isAbove(admitted + cost, 20)
        }
      }))
  })

  layer(RateLimiter.layer.pipe(Layer.provideMerge(PgliteTest)), { timeout: 60_000 })((it) => {
    it.effect("embedded database: the same", () => Effect.andThen(limitedTo3, partlyFull))
  })

  layer(RateLimiter.layerMemory)((it) => {
    it.effect("in memory: the same", () => Effect.andThen(limitedTo3, partlyFull))
  })
})
