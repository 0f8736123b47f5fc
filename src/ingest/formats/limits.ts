import { decodeUtf8 } from "./lines.ts"

/**
 * The largest single record the readers hold: one NDJSON line, one CSV row,
 * one element of a JSON list, one YAML template, or a whole JSON document that
 * is not split. A bigger one is reported as a problem at its position and
 * skipped; reading goes on after it. 16 MiB is about 100 times the largest
 * real upstream record (a nuclei template of 200 KiB) and keeps a few records
 * in memory at once affordable. Documented in docs/ingest.md.
 */
export const MAX_RECORD_BYTES = 16 * 1024 * 1024

export const overCap = (bytes: number) =>
  `record of ${bytes.toLocaleString("en")}+ bytes is over the ${MAX_RECORD_BYTES / 1024 / 1024} MiB per-record cap`

/** Bytes kept while they may still be needed whole (up to the cap; past it only their count). */
export class CappedBytes {
  pieces: Array<Uint8Array> = []
  size = 0
  over = false
  add(bytes: Uint8Array) {
    this.size += bytes.length
    if (this.over) return
    if (this.size > MAX_RECORD_BYTES) {
      this.over = true
      this.pieces = []
    } else this.pieces.push(bytes)
  }
  text() {
    return decodeUtf8(this.pieces, this.size)
  }
  drop() {
    this.pieces = []
    this.over = true
  }
}
