import { Schema, Stream } from "effect"
import { createReadStream } from "node:fs"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { createGunzip } from "node:zlib"
import type { SourceFile } from "./SourceFiles.ts"

/**
 * The size of one chunk of a file's bytes on the admin socket: big enough that
 * the per-chunk round trip is noise, small enough that every object a chunk
 * makes in the server (its message's text, the base64 string in it, its
 * bytes) stays under V8's large-object size (128 KiB) and glibc's default
 * mmap threshold. At 256 KiB each of those was a fresh mapping, page-faulted
 * in and unmapped again: a server ingest ran at 3,000 records/s instead of
 * 5,000 (docs/ingest.md "Page faults").
 */
export const CHUNK_BYTES = 64 * 1024

export class FileUnreadable extends Schema.TaggedError<FileUnreadable>()("FileUnreadable", {
  reason: Schema.String
}) {
  override get message() {
    return this.reason
  }
}

const GZIP_MAGIC = [0x1f, 0x8b] as const

const isGzip = (head: Uint8Array) => head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1]

/** Whole chunks of at most `size` bytes out of a stream of pieces of any size. */
async function* rechunk(pieces: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Uint8Array> {
  let held: Array<Uint8Array> = []
  let heldBytes = 0
  for await (const piece of pieces) {
    let rest = piece
    while (rest.length > 0) {
      const take = Math.min(size - heldBytes, rest.length)
      held.push(rest.subarray(0, take))
      heldBytes += take
      rest = rest.subarray(take)
      if (heldBytes === size) {
        yield held.length === 1 ? held[0]! : Buffer.concat(held, heldBytes)
        held = []
        heldBytes = 0
      }
    }
  }
  if (heldBytes > 0) yield held.length === 1 ? held[0]! : Buffer.concat(held, heldBytes)
}

/**
 * A file's bytes as the CLI reads them (standard input when it has no path),
 * gunzipped when its name ends in `.gz` or it starts with gzip's magic bytes.
 * Everything is pulled: a chunk is read (and inflated) only when the previous
 * one was taken, so a slow server, a huge file or a gzip bomb never grows the
 * CLI's memory past a few chunks.
 */
export async function* readChunks(
  file: Pick<SourceFile, "path" | "display">,
  size = CHUNK_BYTES
): AsyncGenerator<Uint8Array> {
  const input: Readable = file.path === undefined ? process.stdin : createReadStream(file.path, { highWaterMark: size })
  const pieces = input[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>
  // Enough bytes to see the magic (a pipe may deliver one byte at a time).
  const head: Array<Uint8Array> = []
  let headBytes = 0
  while (headBytes < GZIP_MAGIC.length) {
    const next = await pieces.next()
    if (next.done === true) break
    head.push(next.value)
    headBytes += next.value.length
  }
  const first = Buffer.concat(head)
  async function* all(): AsyncGenerator<Uint8Array> {
    if (first.length > 0) yield first
    while (true) {
      const next = await pieces.next()
      if (next.done === true) return
      yield next.value
    }
  }
  if (!(file.display.toLowerCase().endsWith(".gz") || isGzip(first))) return yield* rechunk(all(), size)
  const gunzip = createGunzip({ chunkSize: 64 * 1024 })
  const feeding = pipeline(Readable.from(all()), gunzip)
  feeding.catch(() => {}) // the error surfaces through the gunzip stream being read
  yield* rechunk(gunzip, size)
  await feeding
}

export const fileBytes = (file: Pick<SourceFile, "path" | "display">): Stream.Stream<Uint8Array, FileUnreadable> =>
  Stream.fromAsyncIterable(
    { [Symbol.asyncIterator]: () => readChunks(file) },
    (cause) =>
      new FileUnreadable({ reason: cause instanceof Error ? cause.message.replace(/^[A-Z]+: /, "") : String(cause) })
  )
