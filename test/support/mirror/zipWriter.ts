import { crc32, deflateRawSync } from "node:zlib"

/** One file of an archive the mirror serves. `store` keeps it uncompressed (an archive inside an archive). */
export interface ZipFileEntry {
  readonly name: string
  readonly data: Buffer
  readonly store?: boolean
}

/**
 * A zip archive (PKWARE APPNOTE 6.3: local headers, central directory, end
 * record; no zip64) as the publishers' tools write them. No zip writer is a
 * dependency and the mirror needs only this much.
 */
export const zipOf = (entries: ReadonlyArray<ZipFileEntry>): Buffer => {
  const locals: Array<Buffer> = []
  const centrals: Array<Buffer> = []
  let offset = 0
  for (const entry of entries) {
    const name = Buffer.from(entry.name, "utf8")
    const body = entry.store === true ? entry.data : deflateRawSync(entry.data)
    const method = entry.store === true ? 0 : 8
    const crc = crc32(entry.data)
    const local = Buffer.alloc(30)
    local.writeUInt32LE(0x04034b50, 0)
    local.writeUInt16LE(20, 4)
    local.writeUInt16LE(0x0800, 6) // UTF-8 names
    local.writeUInt16LE(method, 8)
    local.writeUInt16LE(0, 10)
    local.writeUInt16LE(0x5b19, 12) // 2025-08-25
    local.writeUInt32LE(crc, 14)
    local.writeUInt32LE(body.length, 18)
    local.writeUInt32LE(entry.data.length, 22)
    local.writeUInt16LE(name.length, 26)
    local.writeUInt16LE(0, 28)
    locals.push(local, name, body)
    const central = Buffer.alloc(46)
    central.writeUInt32LE(0x02014b50, 0)
    central.writeUInt16LE(20, 4)
    central.writeUInt16LE(20, 6)
    central.writeUInt16LE(0x0800, 8)
    central.writeUInt16LE(method, 10)
    central.writeUInt16LE(0, 12)
    central.writeUInt16LE(0x5b19, 14)
    central.writeUInt32LE(crc, 16)
    central.writeUInt32LE(body.length, 20)
    central.writeUInt32LE(entry.data.length, 24)
    central.writeUInt16LE(name.length, 28)
    central.writeUInt32LE(offset, 42)
    centrals.push(central, name)
    offset += local.length + name.length + body.length
  }
  const directory = Buffer.concat(centrals)
  const end = Buffer.alloc(22)
  end.writeUInt32LE(0x06054b50, 0)
  end.writeUInt16LE(entries.length, 8)
  end.writeUInt16LE(entries.length, 10)
  end.writeUInt32LE(directory.length, 12)
  end.writeUInt32LE(offset, 16)
  return Buffer.concat([...locals, directory, end])
}

/** 16 MiB of zeros in one entry named like a record: about 16 KiB on the wire, a ratio of about 1,000. */
export const zipBomb = (name: string) => zipOf([{ name, data: Buffer.alloc(16 * 1024 * 1024) }])
