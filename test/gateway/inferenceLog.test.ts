import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { InferenceLog, type InferenceRecord } from "../../src/gateway/InferenceLog.ts"
import { SqlBackends } from "../support/database.ts"

const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"

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
        assert.deepStrictEqual(rows.find((row) => row.requestId.endsWith("01")), entry("0b6b1d36-5d1e-4a44-9a57-1d1f0e4f9a01"))
        yield* log.setEnabled(ORG, false)
        assert.isFalse(yield* log.enabled(ORG))
      }))
  })
})
