import { assert, describe, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import { randomBytes } from "node:crypto"
import { IngestChunk } from "../../src/ingest/IngestEvents.ts"

// The admin socket's NDJSON serialization codes each RPC payload with `Schema.toCodecJson`.
const Json = Schema.toCodecJson(IngestChunk)
const encode = Schema.encodeSync(Json)
const decode = Schema.decodeUnknownResult(Json)

describe("IngestChunk bytes on the admin socket", () => {
  it("travel as standard base64 and come back byte for byte, whatever the length", () => {
    for (const size of [0, 1, 2, 3, 4, 5, 1000, 256 * 1024]) {
      const bytes = new Uint8Array(randomBytes(size))
      const wire = encode({ run: "r", file: 0, bytes, last: false }) as { bytes: string }
      assert.strictEqual(wire.bytes, Buffer.from(bytes).toString("base64"))
      const back = decode(JSON.parse(JSON.stringify(wire)))
      assert.isTrue(Result.isSuccess(back))
      if (Result.isSuccess(back)) assert.deepStrictEqual(Buffer.from(back.success.bytes), Buffer.from(bytes))
    }
  })

  it("refuses text that is not standard base64 rather than decoding what it can", () => {
    for (const bytes of ["abc", "ab!d", "YWJj ZGVm", "YWJj\nZGVm", "Y*Jj", "====", "YQ==YQ=="]) {
      assert.isTrue(Result.isFailure(decode({ run: "r", file: 0, bytes, last: false })), bytes)
    }
    assert.isTrue(Result.isSuccess(decode({ run: "r", file: 0, bytes: "YWJjZA==", last: true })))
  })
})
