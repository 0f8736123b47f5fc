import { crc32 } from "node:zlib"

/** The parts of one event-stream message the inference log reads. */
export interface FrameFacts {
  /** `:message-type`: `event`, `exception` or `error`. */
  readonly messageType: string | undefined
  /** `:event-type`, `:exception-type` or `:error-code`, whichever the message type names. */
  readonly type: string | undefined
  /** Where the payload sits in the bytes read. */
  readonly payloadStart: number
  readonly payloadEnd: number
}

/** Checks and reads the one whole message in `bytes[start, end)`; throws `FrameError` when it is not a valid one. */
export type FrameDecoder = (bytes: Buffer, start: number, end: number) => FrameFacts

export class FrameError extends Error {}

/** Prelude: total length, headers length, prelude CRC. */
const PRELUDE_BYTES = 12

/** Header value sizes by type tag (0 true, 1 false, 2 byte, 3 short, 4 int, 5 long, 8 timestamp, 9 uuid); 6 and 7 carry a length. */
const FIXED_SIZES = [0, 0, 1, 2, 4, 8, -1, -1, 8, 16]
const STRING_TAG = 7

const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0))
const MESSAGE_TYPE = ascii(":message-type")
const EVENT_TYPE = ascii(":event-type")
const EXCEPTION_TYPE = ascii(":exception-type")
const ERROR_CODE = ascii(":error-code")

const sameBytes = (bytes: Buffer, at: number, length: number, expected: Uint8Array): boolean => {
  if (length !== expected.length) return false
  for (let i = 0; i < length; i++) if (bytes[at + i] !== expected[i]) return false
  return true
}

// The 8-byte prelude is checked in JS: cheaper than a native call on a new view.
const CRC_TABLE = new Uint32Array(256)
for (let n = 0; n < 256; n++) {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  CRC_TABLE[n] = c >>> 0
}
const preludeCrc = (bytes: Buffer, start: number): number => {
  let crc = 0xffffffff
  for (let i = start; i < start + 8; i++) crc = CRC_TABLE[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

/** One string value, decoded once while it repeats (a stream is mostly the same event type). */
class RepeatedString {
  private bytes: Uint8Array = new Uint8Array(0)
  private text = ""

  read(source: Buffer, at: number, length: number): string {
    if (!sameBytes(source, at, length, this.bytes)) {
      this.bytes = new Uint8Array(source.subarray(at, at + length))
      this.text = source.toString("utf8", at, at + length)
    }
    return this.text
  }
}

/**
 * A frame decoder for one stream: checks the prelude CRC over the first 8
 * bytes and the message CRC over everything but its own 4 (as the AWS SDK's
 * `EventStreamCodec.decode` does; the tests use the codec as the reference),
 * then walks the headers and decodes only the string values the inference
 * log needs. The codec builds an object per header and a `TextDecoder` per
 * string, several times the cost on a one-token Kiro frame (figures:
 * docs/gateway.md, "Kiro").
 */
export const makeFrameReader = (): FrameDecoder => {
  const messageTypes = new RepeatedString()
  const types = new RepeatedString()

  return (bytes, start, end) => {
    const total = end - start
    const headersLength = bytes.readUInt32BE(start + 4)
    if (bytes.readUInt32BE(start) !== total || PRELUDE_BYTES + headersLength + 4 > total) throw new FrameError("length")
    const prelude = preludeCrc(bytes, start)
    if (prelude !== bytes.readUInt32BE(start + 8)) throw new FrameError("prelude crc")
    if (crc32(bytes.subarray(start + 8, end - 4), prelude) !== bytes.readUInt32BE(end - 4)) {
      throw new FrameError("message crc")
    }

    let messageType: string | undefined
    // Where each candidate type header's value sits; decoded once the message type says which one counts.
    let eventAt = -1, eventLength = 0, exceptionAt = -1, exceptionLength = 0, errorAt = -1, errorLength = 0
    const headersEnd = start + PRELUDE_BYTES + headersLength
    let at = start + PRELUDE_BYTES
    while (at < headersEnd) {
      const nameLength = bytes[at]!
      const nameAt = at + 1
      at = nameAt + nameLength
      const fixed = FIXED_SIZES[bytes[at]!]
      if (fixed === undefined) throw new FrameError("header type")
      const tag = bytes[at++]
      if (fixed >= 0) {
        at += fixed
        continue
      }
      const length = bytes.readUInt16BE(at)
      at += 2
      if (tag === STRING_TAG) {
        if (sameBytes(bytes, nameAt, nameLength, MESSAGE_TYPE)) messageType = messageTypes.read(bytes, at, length)
        else if (sameBytes(bytes, nameAt, nameLength, EVENT_TYPE)) {
          eventAt = at
          eventLength = length
        } else if (sameBytes(bytes, nameAt, nameLength, EXCEPTION_TYPE)) {
          exceptionAt = at
          exceptionLength = length
        } else if (sameBytes(bytes, nameAt, nameLength, ERROR_CODE)) {
          errorAt = at
          errorLength = length
        }
      }
      at += length
    }
    if (at !== headersEnd) throw new FrameError("headers length")
    let typeAt = -1
    let typeLength = 0
    if (messageType === "event") {
      typeAt = eventAt
      typeLength = eventLength
    } else if (messageType === "exception") {
      typeAt = exceptionAt
      typeLength = exceptionLength
    } else if (messageType === "error") {
      typeAt = errorAt
      typeLength = errorLength
    }
    return {
      messageType,
      type: typeAt === -1 ? undefined : types.read(bytes, typeAt, typeLength),
      payloadStart: headersEnd,
      payloadEnd: end - 4
    }
  }
}
