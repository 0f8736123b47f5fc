import type { FileHandle } from "node:fs/promises"

/** One read of an archive: its entries (and directory records) lie in order, so one read serves hundreds. */
export const WINDOW_BYTES = 4 * 1024 * 1024

/**
 * A window of a file's bytes, read again only when a range falls outside it: how the zip
 * directory reader and the small-entry reader take an archive in 4 MiB reads rather than a
 * read (a libuv round trip) per record.
 */
export class FileWindow {
  private bytes = Buffer.alloc(0)
  private start = 0
  private readonly handle: FileHandle

  constructor(handle: FileHandle) {
    this.handle = handle
  }

  /** Makes `[start, end)` of the file available; false when the file ends before `end`. */
  async cover(start: number, end: number): Promise<boolean> {
    if (start >= this.start && end <= this.start + this.bytes.length) return true
    const length = Math.max(end - start, WINDOW_BYTES)
    const buffer = Buffer.allocUnsafe(length)
    const { bytesRead } = await this.handle.read(buffer, 0, length, start)
    this.bytes = buffer.subarray(0, bytesRead)
    this.start = start
    return end <= start + bytesRead
  }

  /** `[start, end)` of the file, within the window `cover` made available (no copy). */
  slice(start: number, end: number): Buffer {
    return this.bytes.subarray(start - this.start, end - this.start)
  }
}
