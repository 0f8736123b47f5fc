import { closeSync, openSync, readSync, writeSync } from "node:fs"
import { crc32, deflateRawSync } from "node:zlib"

/**
 * A zip archive written entry by entry to a file (PKWARE APPNOTE 6.3), for
 * the sync bench's mirror: the CVE List baseline and OSV's `all.zip` hold
 * hundreds of thousands of entries, past the 65,535 of a plain end record,
 * so past that count the archive ends with the zip64 end record and its
 * locator, as the publishers' archives do. Offsets and sizes stay below
 * 4 GiB (checked), so entries need no zip64 extra field.
 * test/support/mirror/zipWriter.ts builds the small in-memory ones.
 */
export interface ZipFileWriter {
  /** Deflates `data` (level 1: the mirror is generated once and cached; inflating costs the same). */
  readonly add: (name: string, data: Buffer) => void
  /** Copies the file at `path` in uncompressed (an archive inside the archive). */
  readonly addStoredFile: (name: string, path: string, size: number) => void
  readonly close: () => void
}

const LIMIT = 0xffffffff

export const zipFile = (path: string): ZipFileWriter => {
  const fd = openSync(path, "w")
  const centrals: Array<Buffer> = []
  let offset = 0
  let count = 0
  const write = (buffer: Buffer) => {
    writeSync(fd, buffer)
    offset += buffer.length
  }
  const header = (name: Buffer, method: number, crc: number, compressed: number, size: number) => {
    if (offset + compressed + 30 + name.length >= LIMIT || size >= LIMIT) throw new Error("zip past 4 GiB")
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4)
    local.writeUInt16LE(0x0800, 6) // UTF-8 names
    local.writeUInt16LE(method, 8)
    local.writeUInt16LE(0x5b19, 12) // 2025-08-25
    local.writeUInt32LE(crc, 14)
    local.writeUInt32LE(compressed, 18)
    local.writeUInt32LE(size, 22)
    local.writeUInt16LE(name.length, 26)
    const central = Buffer.alloc(46)
    central.writeUInt32LE(0x02014b50, 0)
    central.writeUInt16LE(45, 4)
    central.writeUInt16LE(20, 6)
    central.writeUInt16LE(0x0800, 8)
    central.writeUInt16LE(method, 10)
    central.writeUInt16LE(0x5b19, 14)
    central.writeUInt32LE(crc, 16)
    central.writeUInt32LE(compressed, 20)
    central.writeUInt32LE(size, 24)
    central.writeUInt16LE(name.length, 28)
    central.writeUInt32LE(offset, 42)
    centrals.push(central, name)
    count++
    write(local)
    write(name)
  }
  return {
    add: (name, data) => {
      const body = deflateRawSync(data, { level: 1 })
      header(Buffer.from(name, "utf8"), 8, crc32(data), body.length, data.length)
      write(body)
    },
    addStoredFile: (name, from, size) => {
      const input = openSync(from, "r")
      const chunk = Buffer.alloc(4 * 1024 * 1024)
      let crc = 0
      for (let n; (n = readSync(input, chunk)) > 0;) crc = crc32(chunk.subarray(0, n), crc)
      header(Buffer.from(name, "utf8"), 0, crc, size, size)
      for (let at = 0, n; (n = readSync(input, chunk, 0, chunk.length, at)) > 0; at += n) write(chunk.subarray(0, n))
      closeSync(input)
    },
    close: () => {
      const directory = Buffer.concat(centrals)
      const directoryAt = offset
      write(directory)
      if (count > 0xffff) {
        const zip64At = offset
        const record = Buffer.alloc(56)
        record.writeUInt32LE(0x06064b50, 0)
        record.writeBigUInt64LE(44n, 4)
        record.writeUInt16LE(45, 12)
        record.writeUInt16LE(45, 14)
        record.writeBigUInt64LE(BigInt(count), 24)
        record.writeBigUInt64LE(BigInt(count), 32)
        record.writeBigUInt64LE(BigInt(directory.length), 40)
        record.writeBigUInt64LE(BigInt(directoryAt), 48)
        write(record)
        const locator = Buffer.alloc(20)
        locator.writeUInt32LE(0x07064b50, 0)
        locator.writeBigUInt64LE(BigInt(zip64At), 8)
        locator.writeUInt32LE(1, 16)
        write(locator)
      }
      const end = Buffer.alloc(22)
      end.writeUInt32LE(0x06054b50, 0)
      end.writeUInt16LE(Math.min(count, 0xffff), 8)
      end.writeUInt16LE(Math.min(count, 0xffff), 10)
      end.writeUInt32LE(directory.length, 12)
      end.writeUInt32LE(directoryAt, 16)
      write(end)
      closeSync(fd)
    }
  }
}
