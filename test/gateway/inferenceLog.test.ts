import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { InferenceLog, type InferenceRecord } from "../../src/inference/InferenceLog.ts"
import { SqlBackends } from "../support/database.ts"

const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"

/** A distinct valid UUID per (series, n), so each test can count its own rows. */
const requestId = (series: number, n: number) =>
  `${String(series).padStart(8, "0")}-0000-4000-8000-${String(n).padStart(12, "0")}`

const entry = (requestId: string): InferenceRecord => ({
  requestId,
  orgUuid: ORG,
  provider: "openai",
  surface: "chat",
  model: "gpt-4.1",
  status: 200,
  latencyMs: 12.5,
  requestBytes: 321,
  responseBytes: 654,
  decision: "allow"
})

describe.each(SqlBackends)("InferenceLog on $name", ({ layer: backend }) => {
  layer(InferenceLog.layer.pipe(Layer.provideMerge(backend)), { excludeTestServices: true })((it) => {
    it.effect("is off until enabled, then stores metadata rows off the response path", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`
          INSERT INTO organizations (uuid, name, secret_sealed) VALUES (${ORG}, ${"log test"}, ${"sealed"})
        `
        const log = yield* InferenceLog
        assert.isFalse(yield* log.enabled(ORG))
        yield* log.setEnabled(ORG, true)
        assert.isTrue(yield* log.enabled(ORG))
        yield* log.record(entry("0b6b1d36-5d1e-4a44-9a57-1d1f0e4f9a01"))
        yield* log.record(entry("0b6b1d36-5d1e-4a44-9a57-1d1f0e4f9a02"))
        let rows: ReadonlyArray<InferenceRecord> = []
        for (let i = 0; i < 50 && rows.length < 2; i++) {
          yield* Effect.sleep("20 millis")
          rows = yield* log.recent(ORG, 10)
        }
        assert.strictEqual(rows.length, 2)
        assert.deepStrictEqual(
          rows.find((row) => row.requestId.endsWith("01")),
          entry("0b6b1d36-5d1e-4a44-9a57-1d1f0e4f9a01")
        )
        yield* log.setEnabled(ORG, false)
        assert.isFalse(yield* log.enabled(ORG))
      }))

    it.effect("stores a backlog of 7,500 rows (one unnest statement per batch, no parameter limit)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const log = yield* InferenceLog
        for (let i = 0; i < 7500; i++) yield* log.record(entry(requestId(1, i)))
        yield* log.flush
        const [row] = yield* sql<{ n: string | number }>`
          SELECT count(*) AS n FROM gateway_inference_log WHERE request_id::text LIKE '00000001-%'`
        assert.strictEqual(Number(row!.n), 7500)
        assert.strictEqual(yield* log.droppedCount, 0)
      }))

    it.effect("a row the database refuses is counted as dropped; the rest of its batch is stored", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const log = yield* InferenceLog
        yield* log.record(entry(requestId(2, 1)))
        yield* log.record({ ...entry("not-a-uuid"), model: "bad\u0000row" })
        yield* log.record({ ...entry(requestId(2, 2)), model: "gpt\u0000\uD800" })
        yield* log.flush
        const rows = yield* sql<{ model: string }>`
          SELECT model FROM gateway_inference_log WHERE request_id::text LIKE '00000002-%' ORDER BY request_id`
        assert.deepStrictEqual(rows.map((r) => r.model), ["gpt-4.1", "gpt\uFFFD\uFFFD"])
        assert.strictEqual(yield* log.droppedCount, 1)
      }))

    it.effect("closing the layer (shutdown) writes what is still queued", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // A second instance on the same database, closed without a flush: its finalizer must write.
        yield* Effect.scoped(Effect.gen(function*() {
          const context = yield* Layer.build(Layer.fresh(InferenceLog.layer))
          const log = Context.get(context, InferenceLog)
          for (let i = 0; i < 1200; i++) yield* log.record(entry(requestId(3, i)))
        }))
        const [row] = yield* sql<{ n: string | number }>`
          SELECT count(*) AS n FROM gateway_inference_log WHERE request_id::text LIKE '00000003-%'`
        assert.strictEqual(Number(row!.n), 1200)
      }))
  })
})
