import { EventStreamCodec, type MessageHeaders } from "@smithy/eventstream-codec"
import { fromUtf8, toUtf8 } from "@smithy/util-utf8"
import type { FrameDecoder } from "../../../src/gateway/kiro/FrameReader.ts"

const codec = new EventStreamCodec(toUtf8, fromUtf8)
const text = (value: string) => ({ type: "string" as const, value })

/** Any frame, with any headers. */
export const encodeFrame = (headers: MessageHeaders, body: Uint8Array): Uint8Array => codec.encode({ headers, body })

/** One `:message-type: event` frame, as Kiro sends them. */
export const eventFrame = (type: string, payload: unknown): Uint8Array =>
  codec.encode({
    headers: { ":message-type": text("event"), ":event-type": text(type), ":content-type": text("application/json") },
    body: fromUtf8(JSON.stringify(payload))
  })

/** A modelled exception, which ends a stream. */
export const exceptionFrame = (type: string, message: string): Uint8Array =>
  codec.encode({
    headers: {
      ":message-type": text("exception"),
      ":exception-type": text(type),
      ":content-type": text("application/json")
    },
    body: fromUtf8(JSON.stringify({ message }))
  })

/** A whole response: text, a tool call in two parts, metering twice, then an exception. */
export const sampleFrames = (): Array<Uint8Array> => [
  eventFrame("assistantResponseEvent", { content: "Hello" }),
  eventFrame("assistantResponseEvent", { content: ", world" }),
  eventFrame("toolUseEvent", { name: "readFile", toolUseId: "t1", input: "{\"path\":" }),
  eventFrame("toolUseEvent", { name: "readFile", toolUseId: "t1", input: "\"a.ts\"}", stop: true }),
  eventFrame("meteringEvent", { unit: "credit", unitPlural: "credits", usage: 0.25 }),
  eventFrame("meteringEvent", { unit: "credit", unitPlural: "credits", usage: 0.5 }),
  exceptionFrame("ThrottlingException", "slow down")
]

export const concat = (parts: ReadonlyArray<Uint8Array>): Buffer =>
  Buffer.concat(parts.map((part) => Buffer.from(part)))

/** Cuts at the given offsets (sorted, inside the buffer). */
export const splitAt = (bytes: Uint8Array, offsets: ReadonlyArray<number>): Array<Uint8Array> => {
  const out: Array<Uint8Array> = []
  let from = 0
  for (const at of offsets) {
    out.push(bytes.subarray(from, at))
    from = at
  }
  out.push(bytes.subarray(from))
  return out
}

/** The SDK codec's reading of a frame, in `FrameDecoder` terms: the reference the tests and the measurement compare against. */
export const codecDecode: FrameDecoder = (bytes, start, end) => {
  const message = codec.decode(bytes.subarray(start, end))
  const strings = (name: string) => {
    const header = message.headers[name]
    return header !== undefined && header.type === "string" ? header.value : undefined
  }
  const messageType = strings(":message-type")
  const typeHeader = messageType === "event"
    ? ":event-type"
    : messageType === "exception"
    ? ":exception-type"
    : messageType === "error"
    ? ":error-code"
    : undefined
  const payloadStart = message.body.byteOffset - bytes.byteOffset
  return {
    messageType,
    type: typeHeader === undefined ? undefined : strings(typeHeader),
    payloadStart,
    payloadEnd: payloadStart + message.body.byteLength
  }
}
