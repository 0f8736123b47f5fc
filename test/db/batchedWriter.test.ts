import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { TestClock } from "effect/testing"
import * as BatchedWriter from "../../src/db/BatchedWriter.ts"
import type { UsageEntry } from "../../src/usage/UsageEntry.ts"
import { UsageLog } from "../../src/usage/UsageLog.ts"
import { SqlBackends } from "../support/database.ts"

const ORG_A = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e51"
const ORG_B = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e52"

const usage = (orgUuid: string, identifier: string, userAgent = "curl/8"): UsageEntry => ({
  orgUuid,
  method: "GET",
  route: "/v1/vuln/:identifier",
  identifier,
  status: 200,
  latencyMs: 1.5,
  clientAddress: "127.0.0.1",
  userAgent,
  at: new Date()
})

/** Builds a layer in its own scope, runs `use`, then closes the scope (the layer's finalizers run). */
const withLayer = <ROut, A, E>(layer: Layer.Layer<ROut, never, SqlClient.SqlClient>, use: Effect.Effect<A, E, ROut>) =>
  Effect.scoped(Effect.flatMap(Layer.build(Layer.fresh(layer)), (context) => Effect.provideContext(use, context)))

/** A write that fails as an unreachable database does while `down.now` is true. */
const switchable = () => {
  const state = { down: true, attempts: 0, written: [] as Array<number> }
  const write = (rows: ReadonlyArray<number>) =>
    Effect.suspend(() => {
      state.attempts++
      if (!state.down) return Effect.sync(() => void state.written.push(...rows))
      return Effect.fail(
        new SqlError.SqlError({ reason: new SqlError.ConnectionError({ cause: new Error("ECONNREFUSED") }) })
      )
    })
  return { state, write }
}

describe("BatchedWriter while the database is unreachable", () => {
  it.effect("holds the rows without trying each one, and writes them once the database is back", () =>
    Effect.gen(function*() {
      const { state, write } = switchable()
      const scope = yield* Scope.make()
      const writer = yield* BatchedWriter.make<number>({
        name: "probe",
        capacity: 100,
        batchSize: 50,
        linger: "1 hour",
        write
      }).pipe(Scope.provide(scope))
      for (let i = 0; i < 20; i++) writer.offer(i)
      yield* writer.flush
      // One attempt for the batch: the connection failure tells every row would fail the same way.
      assert.strictEqual(state.attempts, 1)
      assert.strictEqual(yield* writer.dropped, 0)
      state.down = false
      yield* writer.flush
      assert.deepStrictEqual(state.written, Array.from({ length: 20 }, (_, i) => i))
      assert.strictEqual(yield* writer.dropped, 0)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("drops what is past the bounds: rows beyond holdRows, rows held longer than holdFor, rows held at close", () =>
    Effect.gen(function*() {
      const { state, write } = switchable()
      const scope = yield* Scope.make()
      const recorded: Array<number> = []
      const writer = yield* BatchedWriter.make<number>({
        name: "probe",
        capacity: 100,
        batchSize: 50,
        linger: "1 hour",
        holdRows: 30,
        holdFor: "10 seconds",
        write,
        recordDropped: (n) => state.down ? Effect.fail("down") : Effect.sync(() => void recorded.push(n))
      }).pipe(Scope.provide(scope))
      for (let i = 0; i < 50; i++) writer.offer(i)
      yield* writer.flush
      assert.strictEqual(yield* writer.dropped, 20)
      // Within holdFor the 30 held are kept (the bound is full: a new row is dropped); past it they
      // are dropped, and a new row is held.
      yield* TestClock.adjust("9 seconds")
      writer.offer(50)
      yield* writer.flush
      assert.strictEqual(yield* writer.dropped, 21)
      yield* TestClock.adjust("2 seconds")
      writer.offer(51)
      yield* writer.flush
      assert.strictEqual(yield* writer.dropped, 51)
      // The database back: what is held is written, and the count recorded.
      state.down = false
      yield* writer.flush
      assert.deepStrictEqual(state.written, [51])
      assert.deepStrictEqual(recorded, [51])
      // Down again at close: the rows still held are counted.
      state.down = true
      writer.offer(52)
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(yield* writer.dropped, 52)
    }))

  it.live("retries on its own with a backoff, so a short outage loses nothing", () =>
    Effect.gen(function*() {
      const { state, write } = switchable()
      const scope = yield* Scope.make()
      const writer = yield* BatchedWriter.make<number>({
        name: "probe",
        capacity: 100,
        batchSize: 50,
        linger: "10 millis",
        write
      }).pipe(Scope.provide(scope))
      for (let i = 0; i < 5; i++) writer.offer(i)
      yield* Effect.sleep("700 millis")
      // Retried meanwhile (after 100, 200, 400 ms), each time one attempt for everything held.
      assert.isAtLeast(state.attempts, 3)
      assert.isAtMost(state.attempts, 5)
      writer.offer(5)
      state.down = false
      for (let i = 0; i < 40 && state.written.length < 6; i++) yield* Effect.sleep("100 millis")
      assert.deepStrictEqual(state.written, [0, 1, 2, 3, 4, 5])
      assert.strictEqual(yield* writer.dropped, 0)
      yield* Scope.close(scope, Exit.void)
    }))
})

describe.each(SqlBackends)("BatchedWriter on $name", ({ layer: backend }) => {
  layer(backend, { excludeTestServices: true, timeout: 60_000 })((it) => {
    it.effect("a row the database refuses is retried alone and counted; the rest of its batch is stored", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE batched_writer_probe (v text NOT NULL)`
        const recorded: Array<number> = []
        const scope = yield* Scope.make()
        const writer = yield* BatchedWriter.make<string>({
          name: "probe",
          capacity: 100,
          batchSize: 50,
          linger: "1 second",
          write: (rows) => sql`INSERT INTO batched_writer_probe (v) SELECT * FROM unnest(${rows}::text[])`,
          recordDropped: (n) => Effect.sync(() => void recorded.push(n))
        }).pipe(Scope.provide(scope))
        for (const v of ["a", "b\u0000", "c", "d"]) assert.isTrue(writer.offer(v))
        yield* writer.flush
        const rows = yield* sql<{ v: string }>`SELECT v FROM batched_writer_probe ORDER BY v`
        assert.deepStrictEqual(rows.map((r) => r.v), ["a", "c", "d"])
        assert.strictEqual(yield* writer.dropped, 1)
        assert.deepStrictEqual(recorded, [1])

        // A full queue refuses at once and counts the row; closing the scope flushes the rest.
        const small = yield* BatchedWriter.make<string>({
          name: "probe",
          capacity: 2,
          batchSize: 50,
          linger: "1 hour",
          write: (rows) => sql`INSERT INTO batched_writer_probe (v) SELECT * FROM unnest(${rows}::text[])`
        }).pipe(Scope.provide(scope))
        assert.deepStrictEqual([small.offer("x"), small.offer("y"), small.offer("z")], [true, true, false])
        assert.strictEqual(yield* small.dropped, 1)
        yield* Scope.close(scope, Exit.void)
        const after = yield* sql<
          { v: string }
        >`SELECT v FROM batched_writer_probe WHERE v IN ('x', 'y', 'z') ORDER BY v`
        assert.deepStrictEqual(after.map((r) => r.v), ["x", "y"])
      }))

    it.effect("usage log: a NUL or lone surrogate in one request never loses other organizations' entries", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const summary = yield* withLayer(
          UsageLog.layer,
          Effect.gen(function*() {
            const log = yield* UsageLog
            log.record(usage(ORG_A, "CVE-2021-44228"))
            log.record(usage(ORG_B, "CVE-2021-44228\u0000", "agent\uD800"))
            log.record(usage(ORG_A, "CVE-2021-45046"))
            yield* log.flush
            assert.strictEqual(yield* log.droppedCount, 0)
            return yield* log.summary({})
          })
        )
        const rows = yield* sql<{ org_uuid: string; identifier: string; user_agent: string }>`
          SELECT org_uuid::text AS org_uuid, identifier, user_agent FROM usage_log ORDER BY id`
        assert.deepStrictEqual(rows.map((r) => [r.org_uuid, r.identifier, r.user_agent]), [
          [ORG_A, "CVE-2021-44228", "curl/8"],
          [ORG_B, "CVE-2021-44228\uFFFD", "agent\uFFFD"],
          [ORG_A, "CVE-2021-45046", "curl/8"]
        ])
        assert.strictEqual(summary.dropped, 0)
      }))

    it.effect("usage log: closing the layer writes what is still queued", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* withLayer(
          UsageLog.layer,
          Effect.gen(function*() {
            const log = yield* UsageLog
            for (let i = 0; i < 1200; i++) log.record(usage(ORG_B, `CVE-2020-${10000 + i}`))
          })
        )
        const [row] = yield* sql<
          { n: string | number }
        >`SELECT count(*) AS n FROM usage_log WHERE identifier LIKE 'CVE-2020-%'`
        assert.strictEqual(Number(row!.n), 1200)
      }))
  })
})
