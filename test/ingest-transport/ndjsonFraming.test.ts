import { assert, describe, it } from "@effect/vitest"
import { RpcSerialization } from "effect/rpc"
import { randomBytes } from "node:crypto"
import { makeParser } from "../../src/admin/NdjsonFraming.ts"

// The admin socket's framing: whatever the socket's reads cut, the same messages come out, in order.
const messages: ReadonlyArray<unknown> = [
  { _tag: "Request", id: "1", tag: "Ingest", payload: { text: "café, 😀, \u2028 and \\n" } },
  { _tag: "Chunk", id: "1", payload: { bytes: randomBytes(3000).toString("base64") } },
  [1, 2, { nested: ["é".repeat(100)] }],
  "a string message",
  { _tag: "Eof" }
]

const wire = () => Buffer.from(makeParser().encode(messages) as string, "utf8")

const decodeAll = (chunks: ReadonlyArray<Uint8Array | string>, parser = makeParser()) =>
  chunks.flatMap((chunk) => [...parser.decode(chunk)])

describe("admin socket NDJSON framing", () => {
  it("decodes the same messages wherever a read cuts the bytes, inside a UTF-8 sequence too", () => {
    const bytes = wire()
    for (let cut = 0; cut <= bytes.length; cut++) {
      assert.deepStrictEqual(decodeAll([bytes.subarray(0, cut), bytes.subarray(cut)]), messages, `cut at ${cut}`)
    }
    const single = Array.from(bytes, (byte) => Uint8Array.of(byte))
    assert.deepStrictEqual(decodeAll(single), messages)
    assert.deepStrictEqual(decodeAll([bytes]), messages)
  })

  it("keeps a partial message intact when the transport reuses its read buffer", () => {
    const bytes = wire()
    const read = new Uint8Array(bytes.length)
    const parser = makeParser()
    read.set(bytes.subarray(0, 40))
    const first = [...parser.decode(read.subarray(0, 40))]
    read.fill(0x20)
    read.set(bytes.subarray(40))
    assert.deepStrictEqual([...first, ...parser.decode(read.subarray(0, bytes.length - 40))], messages)
  })

  it("accepts text chunks, CRLF line ends and blank lines", () => {
    const text = `{"a":1}\r\n\r\n\n{"b":"é"}\n`
    assert.deepStrictEqual(decodeAll([text.slice(0, 5), text.slice(5)]), [{ a: 1 }, { b: "é" }])
  })

  it("refuses a message over the cap, whole or in pieces, and reads the next one", () => {
    const big = JSON.stringify({ pad: "x".repeat(200) }) + "\n"
    const after = `{"ok":true}\n`
    const parser = makeParser(100)
    assert.throws(() => parser.decode(big), RpcSerialization.MaxBufferSizeExceeded)
    assert.deepStrictEqual([...parser.decode(after)], [{ ok: true }])
    const pieces = makeParser(100)
    assert.deepStrictEqual([...pieces.decode(big.slice(0, 60))], [])
    assert.throws(() => pieces.decode(big.slice(60, 150)), RpcSerialization.MaxBufferSizeExceeded)
    assert.deepStrictEqual([...pieces.decode(after)], [{ ok: true }])
  })

  it("fails a line that is not JSON with NdjsonDecodeError and goes on with the next", () => {
    const parser = makeParser()
    assert.deepStrictEqual([...parser.decode(`{"one":1}\n{"tw`)], [{ one: 1 }])
    assert.throws(() => parser.decode(`o":\n`), RpcSerialization.NdjsonDecodeError)
    assert.deepStrictEqual([...parser.decode(`{"three":3}\n`)], [{ three: 3 }])
  })

  it("encodes one message or a batch as lines, and nothing for an empty batch", () => {
    const parser = makeParser()
    assert.strictEqual(parser.encode({ a: 1 }), `{"a":1}\n`)
    assert.strictEqual(parser.encode([{ a: 1 }, { b: 2 }]), `{"a":1}\n{"b":2}\n`)
    assert.isUndefined(parser.encode([]))
  })
})
