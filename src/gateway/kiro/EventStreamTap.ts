import { pipeline, type Readable, Transform } from "node:stream"
import type { StreamRecord } from "../../inference/InferenceLog.ts"
import { type FrameDecoder, makeFrameReader } from "./FrameReader.ts"

/** What the inference log keeps of a Kiro response: event names and metered usage, never content. */
export type EventStreamSummary = StreamRecord

/** An event-stream message is at most 16 MiB; a larger prelude means the stream is not what it claims. */
const MAX_FRAME_BYTES = 16 * 1024 * 1024
/** Prelude (total length, headers length, prelude CRC) plus the message CRC. */
const MIN_FRAME_BYTES = 16
const MAX_EXCEPTIONS = 8
const MAX_EVENT_NAMES = 32

/**
 * Reads `application/vnd.amazon.eventstream` frames out of a byte stream
 * that arrives in arbitrary pieces. The framing (a frame's total length is
 * its first four bytes) is done here; each whole frame is checked and read
 * by the frame reader (prelude CRC, headers, payload, message CRC). It only ever
 * reads the bytes it is fed, and keeps its own copy of an unfinished frame.
 */
export class EventStreamReader {
  private readonly decode: FrameDecoder
  private pending: Buffer | undefined = undefined
  private readonly events = new Map<string, number>()
  private readonly exceptions: Array<string> = []
  private usage: number | undefined = undefined
  private unit: string | undefined = undefined
  private undecodable = false

  constructor(decode: FrameDecoder = makeFrameReader()) {
    this.decode = decode
  }

  feed(chunk: Uint8Array): void {
    if (this.undecodable || chunk.length === 0) return
    const piece = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    const bytes = this.pending === undefined ? piece : Buffer.concat([this.pending, piece])
    let offset = 0
    try {
      while (bytes.length - offset >= 4) {
        const total = bytes.readUInt32BE(offset)
        if (total < MIN_FRAME_BYTES || total > MAX_FRAME_BYTES) return this.stop()
        if (bytes.length - offset < total) break
        this.frame(bytes, offset, offset + total)
        offset += total
      }
    } catch {
      return this.stop()
    }
    // Only the unfinished frame is kept, copied: never a view into the relayed chunk.
    this.pending = offset === bytes.length ? undefined : Buffer.from(bytes.subarray(offset))
  }

  summary(): EventStreamSummary {
    return {
      events: Object.fromEntries(this.events),
      exceptions: [...this.exceptions],
      usage: this.usage,
      unit: this.unit,
      undecodable: this.undecodable || this.pending !== undefined
    }
  }

  private stop(): void {
    this.undecodable = true
    this.pending = undefined
  }

  private frame(bytes: Buffer, start: number, end: number): void {
    const frame = this.decode(bytes, start, end)
    if (frame.messageType === "exception" || frame.messageType === "error") {
      if (this.exceptions.length < MAX_EXCEPTIONS) this.exceptions.push((frame.type ?? frame.messageType).slice(0, 64))
      return
    }
    if (frame.messageType !== "event" || frame.type === undefined) return
    const type = frame.type.slice(0, 64)
    const seen = this.events.get(type)
    if (seen !== undefined) this.events.set(type, seen + 1)
    else if (this.events.size < MAX_EVENT_NAMES) this.events.set(type, 1)
    if (type === "meteringEvent") this.metering(bytes.toString("utf8", frame.payloadStart, frame.payloadEnd))
  }

  private metering(body: string): void {
    let payload: unknown
    try {
      payload = JSON.parse(body)
    } catch {
      return
    }
    if (typeof payload !== "object" || payload === null) return
    const { unit, usage } = payload as { readonly usage?: unknown; readonly unit?: unknown }
    if (typeof usage !== "number" || !Number.isFinite(usage)) return
    this.usage = (this.usage ?? 0) + usage
    if (typeof unit === "string" && this.unit === undefined) this.unit = unit.slice(0, 32)
  }
}

/**
 * Relays a Kiro event stream unchanged while a side reader decodes it. Each
 * chunk is handed on before the reader sees it, so decoding never holds a
 * byte back; a frame the reader cannot decode stops the reading, never the
 * relay. Destroying the returned stream (client gone) destroys the source,
 * which aborts the upstream request.
 */
export const tapEventStream = (
  source: Readable,
  onDone: (bytes: number, summary: EventStreamSummary) => void,
  decode?: FrameDecoder
): Readable => {
  const reader = new EventStreamReader(decode)
  let bytes = 0
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length
      this.push(chunk)
      reader.feed(chunk)
      callback()
    }
  })
  pipeline(source, tap, () => onDone(bytes, reader.summary()))
  return tap
}
