import { Layer, Schema } from "effect"
import { RpcSerialization } from "effect/rpc"

/** The largest message the admin socket accepts, as effect's NDJSON default. */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024

/** Encoding is effect's own: stateless, so one parser's `encode` serves every connection. */
const effectEncode = RpcSerialization.ndjson.makeUnsafe().encode

const NEWLINE = 0x0a
const RETURN = 0x0d

/**
 * NDJSON framing for the admin socket, scanning each received byte once.
 *
 * effect's `RpcSerialization.ndjson` appends every chunk to one string and
 * searches it for a newline from its start, flattening it again each time:
 * quadratic in the message's size. With 256 KiB ingest chunks (messages of
 * about 350 KB, in 64 KB socket reads) decoding cost 4.5 times the messages'
 * `JSON.parse` (11 times with 16 KB reads), 16 % of the server's main thread
 * in a `bin/vdb ingest` through the server. Here only the new read is
 * searched, and the pieces of a message are joined once, when it is whole.
 *
 * A newline byte never occurs inside a multi-byte UTF-8 sequence, so
 * splitting the bytes before decoding them is exact.
 */
export const makeParser = (maxMessageBytes: number = MAX_MESSAGE_BYTES): RpcSerialization.Parser => {
  let pending: Array<Buffer> = []
  let pendingBytes = 0
  const reset = () => {
    pending = []
    pendingBytes = 0
  }
  const tooLarge = () => {
    reset()
    return new RpcSerialization.MaxBufferSizeExceeded({ maxBufferSize: maxMessageBytes })
  }
  const parse = (line: Buffer): unknown => {
    const end = line.length > 0 && line[line.length - 1] === RETURN ? line.length - 1 : line.length
    try {
      return JSON.parse(line.toString("utf8", 0, end))
    } catch (cause) {
      reset()
      throw new RpcSerialization.NdjsonDecodeError({ cause })
    }
  }
  return {
    decode: (data) => {
      const bytes = typeof data === "string"
        ? Buffer.from(data, "utf8")
        : Buffer.from(data.buffer, data.byteOffset, data.byteLength)
      const items: Array<unknown> = []
      let start = 0
      let newline = bytes.indexOf(NEWLINE, start)
      while (newline !== -1) {
        if (pendingBytes + newline - start > maxMessageBytes) throw tooLarge()
        let line = bytes.subarray(start, newline)
        if (pendingBytes > 0) {
          pending.push(line)
          line = Buffer.concat(pending, pendingBytes + line.length)
          reset()
        }
        if (line.length > 0 && !(line.length === 1 && line[0] === RETURN)) items.push(parse(line))
        start = newline + 1
        newline = bytes.indexOf(NEWLINE, start)
      }
      if (start < bytes.length) {
        if (pendingBytes + bytes.length - start > maxMessageBytes) throw tooLarge()
        // A copy: the transport may reuse the chunk's memory once `decode` returns.
        pending.push(Buffer.from(bytes.subarray(start)))
        pendingBytes += bytes.length - start
      }
      return items
    },
    encode: effectEncode
  }
}

/** NDJSON serialization for the admin RPC, on both ends of the socket. */
export const ndjson = RpcSerialization.RpcSerialization.of({
  contentType: "application/x-ndjson",
  includesFraming: true,
  codecFor: Schema.toCodecJson,
  makeUnsafe: () => makeParser()
})

export const layerNdjson = Layer.succeed(RpcSerialization.RpcSerialization)(ndjson)
