import fc from "fast-check"
import { Readable } from "node:stream"
import { describe, expect, it } from "vitest"
import { EventStreamReader, type EventStreamSummary, tapEventStream } from "../../../src/gateway/kiro/EventStreamTap.ts"
import { makeFrameReader } from "../../../src/gateway/kiro/FrameReader.ts"
import { codecDecode, concat, encodeFrame, eventFrame, sampleFrames, splitAt } from "./frames.ts"

const expected: EventStreamSummary = {
  events: { assistantResponseEvent: 2, toolUseEvent: 2, meteringEvent: 2 },
  exceptions: ["ThrottlingException"],
  usage: 0.75,
  unit: "credit",
  undecodable: false
}

const read = (pieces: ReadonlyArray<Uint8Array>) => {
  const reader = new EventStreamReader()
  for (const piece of pieces) reader.feed(piece)
  return reader.summary()
}

describe("EventStreamReader", () => {
  const stream = concat(sampleFrames())
  const first = sampleFrames()[0]!.length

  it("reads event types, exceptions and metered usage from whole frames", () => {
    expect(read([stream])).toEqual(expected)
  })

  it("gives the same answer wherever the stream is cut in two, inside a prelude included", () => {
    for (let at = 1; at < stream.length; at++) {
      expect(read(splitAt(stream, [at]))).toEqual(expected)
    }
    // Inside the second frame's prelude (total length, headers length, prelude CRC).
    for (const inPrelude of [first + 1, first + 3, first + 5, first + 9]) {
      expect(read(splitAt(stream, [inPrelude, inPrelude + 1]))).toEqual(expected)
    }
  })

  it("gives the same answer one byte at a time", () => {
    expect(read(splitAt(stream, Array.from({ length: stream.length - 1 }, (_, i) => i + 1)))).toEqual(expected)
  })

  it("stops at a frame whose CRC fails, keeping what it read before", () => {
    const frames = sampleFrames()
    const broken = Buffer.from(frames[2]!)
    broken[broken.length - 6] = broken[broken.length - 6]! ^ 0xff // payload byte: the message CRC no longer matches
    const summary = read([concat([frames[0]!, frames[1]!, broken, ...frames.slice(3)])])
    expect(summary.undecodable).toBe(true)
    expect(summary.events).toEqual({ assistantResponseEvent: 2 })
    expect(summary.usage).toBeUndefined()
  })

  it("stops on a prelude claiming an impossible length, and reports a stream cut mid-frame", () => {
    expect(read([Buffer.from([0, 0, 0, 3, 1, 2, 3, 4])]).undecodable).toBe(true)
    expect(read([stream.subarray(0, stream.length - 3)]).undecodable).toBe(true)
  })

  it("ignores a metering payload without a numeric usage", () => {
    const summary = read([concat([eventFrame("meteringEvent", { unit: "credit", usage: "lots" })])])
    expect(summary.events).toEqual({ meteringEvent: 1 })
    expect(summary.usage).toBeUndefined()
  })
})

describe("tapEventStream", () => {
  it("passes the bytes through unchanged and in order, leaves the chunks untouched, then reports the count and the summary", async () => {
    const stream = concat(sampleFrames())
    const chunks = splitAt(stream, [3, 7, 40, 41, 200, stream.length - 1]).map((piece) => Buffer.from(piece))
    const before = chunks.map((chunk) => Buffer.from(chunk))
    let done: { bytes: number; summary: EventStreamSummary } | undefined
    const relayed = tapEventStream(Readable.from(chunks), (bytes, summary) => {
      done = { bytes, summary }
    })
    const received: Array<Buffer> = []
    for await (const chunk of relayed) received.push(chunk as Buffer)
    await new Promise((resolve) => setImmediate(resolve))
    // Reading may join pieces; the bytes and their order are what must not change.
    expect(Buffer.concat(received).equals(stream)).toBe(true)
    chunks.forEach((chunk, i) => expect(chunk.equals(before[i]!)).toBe(true))
    expect(done).toEqual({ bytes: stream.length, summary: expected })
  })

  it("keeps relaying after a frame it cannot decode", async () => {
    const garbage = Buffer.from("not an event stream at all, just bytes")
    let summary: EventStreamSummary | undefined
    const relayed = tapEventStream(Readable.from([garbage, garbage]), (_bytes, s) => {
      summary = s
    })
    const received: Array<Buffer> = []
    for await (const chunk of relayed) received.push(chunk as Buffer)
    await new Promise((resolve) => setImmediate(resolve))
    expect(Buffer.concat(received).equals(Buffer.concat([garbage, garbage]))).toBe(true)
    expect(summary?.undecodable).toBe(true)
  })
})

const codecHeaders = fc.dictionary(
  fc.oneof(
    fc.constantFrom(":message-type", ":event-type", ":exception-type", ":error-code", ":content-type"),
    fc.string({ minLength: 1, maxLength: 20 })
  ),
  fc.oneof(
    fc.record({ type: fc.constant("string" as const), value: fc.string({ maxLength: 40 }) }),
    fc.record({ type: fc.constant("boolean" as const), value: fc.boolean() }),
    fc.record({ type: fc.constant("byte" as const), value: fc.integer({ min: -128, max: 127 }) }),
    fc.record({ type: fc.constant("short" as const), value: fc.integer({ min: -32768, max: 32767 }) }),
    fc.record({ type: fc.constant("integer" as const), value: fc.integer() }),
    fc.record({ type: fc.constant("binary" as const), value: fc.uint8Array({ maxLength: 20 }) }),
    fc.record({ type: fc.constant("timestamp" as const), value: fc.date({ noInvalidDate: true }) }),
    fc.record({ type: fc.constant("uuid" as const), value: fc.uuid() })
  ),
  { maxKeys: 6 }
)

const outcome = (decode: () => unknown) => {
  try {
    return { ok: decode() }
  } catch {
    return { failed: true }
  }
}

describe("the frame reader against the SDK codec", () => {
  const readFrame = makeFrameReader()
  it("reads every header kind and payload as the codec does, and refuses what the codec refuses", () => {
    fc.assert(
      fc.property(
        codecHeaders,
        fc.uint8Array({ maxLength: 64 }),
        fc.nat(),
        fc.integer({ min: 0, max: 255 }),
        (headers, body, position, flip) => {
          // Inside a larger buffer, as the reader sees frames: other bytes before and after.
          const frame = Buffer.concat([
            Buffer.from("before"),
            Buffer.from(encodeFrame(headers as any, body)),
            Buffer.from("after")
          ])
          const [start, end] = [6, frame.length - 5]
          expect(readFrame(frame, start, end)).toEqual(codecDecode(frame, start, end))
          // One damaged byte: both refuse (a CRC covers every byte), or, when the flip is a no-op, both agree.
          const damaged = Buffer.from(frame)
          damaged[start + (position % (end - start))] = damaged[start + (position % (end - start))]! ^ flip
          const a = outcome(() => readFrame(damaged, start, end))
          const b = outcome(() => codecDecode(damaged, start, end))
          expect("failed" in a).toBe("failed" in b)
        }
      ),
      { numRuns: 500 }
    )
  })
})
