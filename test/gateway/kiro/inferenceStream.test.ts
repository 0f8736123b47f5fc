import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { InferenceLog, type InferenceRecord } from "../../../src/inference/InferenceLog.ts"
import { SqlBackends } from "../../support/database.ts"

const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"

const entry = (requestId: string, stream?: InferenceRecord["stream"]): InferenceRecord => ({
  requestId,
  orgUuid: ORG,
  provider: "kiro",
  surface: "kiro",
  model: "claude-sonnet-4.5",
  status: 200,
  latencyMs: 40,
  requestBytes: 100,
  responseBytes: 2000,
  decision: "allow",
  ...(stream === undefined ? {} : { stream })
})

describe.each(SqlBackends)("inference log: Kiro stream summaries on $name", ({ layer: backend }) => {
  layer(InferenceLog.layer.pipe(Layer.provideMerge(backend)), { excludeTestServices: true })((it) => {
    it.effect("stores event counts, exceptions and usage beside the row, and nothing for other surfaces", () =>
      Effect.gen(function*() {
        const log = yield* InferenceLog
        const stream = {
          events: { assistantResponseEvent: 2, toolUseEvent: 2, meteringEvent: 2, "odd\u0000name": 1 },
          exceptions: ["ThrottlingException"],
          usage: 0.75,
          unit: "credit",
          undecodable: false
        }
        yield* log.record(entry("0c6b1d36-5d1e-4a44-9a57-1d1f0e4f9a01", stream))
        yield* log.record(entry("0c6b1d36-5d1e-4a44-9a57-1d1f0e4f9a02"))
        yield* log.flush
        const rows = yield* log.recent(ORG, 10)
        const kiro = rows.find((row) => row.requestId.endsWith("a01"))!
        assert.deepStrictEqual(kiro.stream, {
          ...stream,
          events: { assistantResponseEvent: 2, toolUseEvent: 2, meteringEvent: 2, "odd\uFFFDname": 1 }
        })
        assert.isUndefined(rows.find((row) => row.requestId.endsWith("a02"))!.stream)
      }))
  })
})
