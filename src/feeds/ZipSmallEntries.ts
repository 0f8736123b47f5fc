import { Effect } from "effect"
import type { FileHandle } from "node:fs/promises"
import { crc32, inflateRawSync } from "node:zlib"
import { type FeedRefused, refused } from "./FeedError.ts"
import { FileWindow } from "./FileWindow.ts"
import type { ZipEntryInfo } from "./ZipDirectory.ts"

/**
 * Entries up to this size (compressed and inflated) are read from a buffered
 * window of the archive and inflated in one synchronous call. The publishers'
 * record archives are hundreds of thousands of entries of a few KB: through
 * yauzl's streams each one cost several round trips through libuv's thread
 * pool (a read of its local header, a read of its data, an inflate stream),
 * and the archive was read one entry after another at the pace of those round
 * trips. Bigger entries (an archive inside the archive) still stream.
 */
export const SMALL_ENTRY_BYTES = 1024 * 1024
const LOCAL_HEADER = 0x04034b50
const LOCAL_HEADER_BYTES = 30

export const isSmall = (entry: ZipEntryInfo) =>
  entry.compressedSize <= SMALL_ENTRY_BYTES && entry.uncompressedSize <= SMALL_ENTRY_BYTES &&
  (entry.compressionMethod === 0 || entry.compressionMethod === 8)

/**
 * Reads small entries of one archive through a window of its bytes: `read(entry)`
 * gives the entry's inflated bytes, checked against its declared size and CRC-32
 * (an entry that inflates past its declared size is refused as a bomb before
 * more than that is produced). Entries are expected in the archive's order;
 * one asked out of order costs a read of its own.
 */
export const smallEntryReader = (handle: FileHandle) => {
  const window = new FileWindow(handle)
  const cover = (start: number, end: number) => Effect.promise(() => window.cover(start, end))
  const slice = (start: number, end: number) => window.slice(start, end)
  const name = (entry: ZipEntryInfo) => entry.fileName.slice(0, 200)

  return Effect.fnUntraced(function*(entry: ZipEntryInfo): Effect.fn.Return<Uint8Array, FeedRefused> {
    const at = entry.relativeOffsetOfLocalHeader
    if (!(yield* cover(at, at + LOCAL_HEADER_BYTES))) {
      return yield* refused("Truncated", `the zip archive is cut short (${name(entry)})`)
    }
    const header = slice(at, at + LOCAL_HEADER_BYTES)
    if (header.readUInt32LE(0) !== LOCAL_HEADER) {
      return yield* refused("Corrupt", `the zip archive cannot be read (no local header for ${name(entry)})`)
    }
    const dataStart = at + LOCAL_HEADER_BYTES + header.readUInt16LE(26) + header.readUInt16LE(28)
    const dataEnd = dataStart + entry.compressedSize
    if (!(yield* cover(dataStart, dataEnd))) {
      return yield* refused("Truncated", `the zip archive is cut short (${name(entry)})`)
    }
    const data = slice(dataStart, dataEnd)
    let bytes: Buffer
    if (entry.compressionMethod === 0) bytes = Buffer.from(data)
    else {
      try {
        // At most the declared size comes out: an entry that lies about it is refused, not inflated.
        bytes = inflateRawSync(data, { maxOutputLength: Math.max(1, entry.uncompressedSize) })
      } catch (cause) {
        if (cause instanceof RangeError || (cause as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") {
          return yield* refused("CompressionBomb", `${name(entry)} inflates past its declared size`)
        }
        return yield* refused(
          "Corrupt",
          `the zip archive cannot be read (${name(entry)}: ${String((cause as Error).message).slice(0, 120)})`
        )
      }
    }
    if (bytes.length !== entry.uncompressedSize) {
      return yield* refused(
        bytes.length > entry.uncompressedSize ? "CompressionBomb" : "Corrupt",
        `${name(entry)} inflates to ${bytes.length} bytes, not the ${entry.uncompressedSize} it declares`
      )
    }
    if (crc32(bytes) >>> 0 !== entry.crc32 >>> 0) {
      return yield* refused("Corrupt", `the zip archive cannot be read (${name(entry)}: CRC-32 mismatch)`)
    }
    return bytes
  })
}
