import type { FileHandle } from "node:fs/promises"
import { FileWindow } from "./FileWindow.ts"

/** What the feeds read of a central directory entry (yauzl's `Entry` has the same members). */
export interface ZipEntryInfo {
  readonly fileName: string
  readonly compressedSize: number
  readonly uncompressedSize: number
  readonly compressionMethod: number
  readonly crc32: number
  readonly relativeOffsetOfLocalHeader: number
  isEncrypted(): boolean
  canDecodeFileData(): boolean
}

const EOCD = 0x06054b50
const ZIP64_LOCATOR = 0x07064b50
const ZIP64_EOCD = 0x06064b50
const CENTRAL = 0x02014b50

const entry = (
  fileName: string,
  compressedSize: number,
  uncompressedSize: number,
  compressionMethod: number,
  crc32: number,
  relativeOffsetOfLocalHeader: number,
  flags: number
): ZipEntryInfo => ({
  fileName,
  compressedSize,
  uncompressedSize,
  compressionMethod,
  crc32,
  relativeOffsetOfLocalHeader,
  isEncrypted: () => (flags & 1) !== 0,
  canDecodeFileData: () => (flags & 1) === 0 && (compressionMethod === 0 || compressionMethod === 8)
})

/**
 * The central directory of an archive read in windows of 4 MiB, entry after
 * entry: yauzl reads each entry's record with reads of its own (two round
 * trips through libuv's thread pool per entry, for 300,000 entries twice a
 * run). Only what the feeds' archives use is read here (zip64 end records
 * included); anything else (zip64 sizes in an entry, names not in UTF-8 with
 * bytes past ASCII, several disks) gives `undefined`, and the caller reads the
 * archive through yauzl as before.
 */
export const readDirectory = async (handle: FileHandle): Promise<AsyncIterable<ZipEntryInfo> | undefined> => {
  const { size } = await handle.stat()
  const tailSize = Math.min(size, 65_535 + 22)
  const tail = Buffer.alloc(tailSize)
  await handle.read(tail, 0, tailSize, size - tailSize)
  let at = -1
  for (let i = tailSize - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD) {
      at = i
      break
    }
  }
  if (at < 0 || tail.readUInt16LE(at + 4) !== 0) return undefined
  let count = tail.readUInt16LE(at + 10)
  let offset = tail.readUInt32LE(at + 16)
  if (count === 0xffff || offset === 0xffffffff || tail.readUInt32LE(at + 12) === 0xffffffff) {
    if (at < 20 || tail.readUInt32LE(at - 20) !== ZIP64_LOCATOR) return undefined
    const record = Buffer.alloc(56)
    await handle.read(record, 0, 56, Number(tail.readBigUInt64LE(at - 20 + 8)))
    if (record.readUInt32LE(0) !== ZIP64_EOCD) return undefined
    count = Number(record.readBigUInt64LE(32))
    offset = Number(record.readBigUInt64LE(48))
  }
  const window = new FileWindow(handle)
  // Entries whose sizes or offsets need zip64 fields sit only in archives past 4 GiB: those go to yauzl.
  if (offset >= 0xffffffff || size >= 0xffffffff) return undefined
  const first = offset
  const total = count
  return {
    async *[Symbol.asyncIterator]() {
      let position = first
      for (let n = 0; n < total; n++) {
        if (!(await window.cover(position, position + 46))) throw new Error("the central directory is truncated")
        const b = window.slice(position, position + 46)
        if (b.readUInt32LE(0) !== CENTRAL) throw new Error("invalid central directory file header signature")
        const flags = b.readUInt16LE(8)
        const nameLength = b.readUInt16LE(28)
        const next = position + 46 + nameLength + b.readUInt16LE(30) + b.readUInt16LE(32)
        const compressed = b.readUInt32LE(20)
        const uncompressed = b.readUInt32LE(24)
        const local = b.readUInt32LE(42)
        const method = b.readUInt16LE(10)
        const crc = b.readUInt32LE(16)
        if (!(await window.cover(position, next))) throw new Error("the central directory is truncated")
        // Names outside UTF-8 (IBM 437) read as Latin-1: the feeds' record names are ASCII either way.
        const name = window.slice(position + 46, position + 46 + nameLength)
          .toString((flags & 0x800) === 0 ? "latin1" : "utf8")
        yield entry(name, compressed, uncompressed, method, crc, local, flags)
        position = next
      }
    }
  }
}
