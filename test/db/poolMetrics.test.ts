import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Metric, Redacted, Stream } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { SqlClient } from "effect/sql"
import { layerPostgres } from "../../src/db/Database.ts"
import { throwawayDatabase } from "../support/database.ts"

/**
 * The pool gauges (docs/operations.md, "Process") of a real pool of two connections on the local
 * PostgreSQL: statements beyond the pool's size wait, and both gauges come back to 0.
 */
const valueOf = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

const IN_USE = `vdb_db_pool_connections{state="in_use"}`
const WAITING = "vdb_db_pool_waiting"

describe("database pool gauges", () => {
  it.live(
    "count connections in use and statements waiting, through statements, transactions and streams",
    () =>
      Effect.gen(function*() {
        const registry: Metric.MetricRegistry = new Map()
        const scrape = () => {
          const text = PrometheusMetrics.formatUnsafe(Context.make(Metric.MetricRegistry, registry))
          return { inUse: valueOf(text, IN_USE), waiting: valueOf(text, WAITING) }
        }
        const { url } = yield* throwawayDatabase
        const context = yield* Layer.build(layerPostgres(Redacted.make(url), 2)).pipe(
          Effect.provideService(Metric.MetricRegistry, registry)
        )
        const sql = Context.get(context, SqlClient.SqlClient)
        assert.deepStrictEqual(scrape(), { inUse: 0, waiting: 0 })

        // Five slow statements on a pool of two: two run, three wait.
        const slow = yield* Effect.forkChild(
          Effect.all(Array.from({ length: 5 }, () => sql`SELECT pg_sleep(0.6)`), { concurrency: "unbounded" })
        )
        yield* Effect.sleep("300 millis")
        assert.deepStrictEqual(scrape(), { inUse: 2, waiting: 3 })
        yield* Fiber.join(slow)
        assert.deepStrictEqual(scrape(), { inUse: 0, waiting: 0 })

        // A transaction holds its connection from BEGIN to COMMIT, and still commits.
        yield* sql`CREATE TABLE t (n int)`
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO t VALUES (1)`
          assert.deepStrictEqual(scrape(), { inUse: 1, waiting: 0 })
        }))
        assert.deepStrictEqual(scrape(), { inUse: 0, waiting: 0 })
        assert.deepStrictEqual(yield* sql`SELECT n FROM t`, [{ n: 1 }])

        // A transaction whose statement failed (the error caught) is rolled back, not committed.
        const aborted = yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO t VALUES (2)`
          yield* sql`SELECT 1/0`.pipe(Effect.ignore)
        })).pipe(Effect.flip)
        assert.match(aborted.message, /COMMIT rolled back/)
        assert.deepStrictEqual(yield* sql`SELECT n FROM t`, [{ n: 1 }])

        // A stream holds a connection while it is read.
        const rows = yield* sql`SELECT generate_series(1, 3) AS n`.stream.pipe(
          Stream.tap(() => Effect.sync(() => assert.strictEqual(scrape().inUse, 1))),
          Stream.runCollect
        )
        assert.strictEqual(rows.length, 3)
        assert.deepStrictEqual(scrape(), { inUse: 0, waiting: 0 })

        // A wait interrupted before its grant leaves nothing counted.
        const held = yield* Effect.forkChild(
          Effect.all([sql`SELECT pg_sleep(0.5)`, sql`SELECT pg_sleep(0.5)`], { concurrency: "unbounded" })
        )
        yield* Effect.sleep("150 millis")
        const queued = yield* Effect.forkChild(sql`SELECT 1`)
        yield* Effect.sleep("50 millis")
        assert.deepStrictEqual(scrape(), { inUse: 2, waiting: 1 })
        yield* Fiber.interrupt(queued)
        assert.deepStrictEqual(scrape(), { inUse: 2, waiting: 0 })
        yield* Fiber.join(held)
        assert.deepStrictEqual(scrape(), { inUse: 0, waiting: 0 })
      }).pipe(Effect.scoped),
    30_000
  )
})
