/** One line of a byte stream: its bytes (decoded on demand), or only its size when it is longer than the cap. */
export type Line =
  | {
    readonly number: number
    readonly over: false
    readonly pieces: ReadonlyArray<Uint8Array>
    readonly bytes: number
    /** The first byte that is not ASCII whitespace (undefined on a blank line). */
    readonly first: number | undefined
  }
  | { readonly number: number; readonly over: true; readonly bytes: number }

export const lineText = (line: Line & { readonly over: false }): string =>
  line.bytes === 0 ? "" : decodeUtf8(line.pieces, line.bytes)

export const decodeUtf8 = (pieces: ReadonlyArray<Uint8Array>, size: number): string =>
  pieces.length === 1
    ? Buffer.from(pieces[0]!.buffer, pieces[0]!.byteOffset, pieces[0]!.byteLength).toString("utf8")
    : Buffer.concat(pieces, size).toString("utf8")

const firstByte = (pieces: ReadonlyArray<Uint8Array>): number | undefined => {
  for (const piece of pieces) {
    for (let i = 0; i < piece.length; i++) {
      const b = piece[i]!
      if (b !== 0x20 && (b < 0x09 || b > 0x0d)) return b
    }
  }
  return undefined
}

/**
 * Splits bytes at `\n` as they arrive. A line longer than `max` bytes is not
 * kept: it is reported by size once its end is found, and the next line is
 * read normally (memory stays under `max` plus one chunk).
 */
export class LineSplitter {
  private pieces: Array<Uint8Array> = []
  private size = 0
  private over = false
  private count = 0
  readonly max: number

  constructor(max: number) {
    this.max = max
  }

  *push(bytes: Uint8Array): Generator<Line> {
    let start = 0
    while (start < bytes.length) {
      const nl = bytes.indexOf(10, start)
      this.append(bytes.subarray(start, nl < 0 ? bytes.length : nl))
      if (nl < 0) return
      yield this.take()
      start = nl + 1
    }
  }

  /** The last line when the input does not end with `\n`. */
  *end(): Generator<Line> {
    if (this.size > 0 || this.over) yield this.take()
  }

  private append(piece: Uint8Array) {
    if (piece.length === 0) return
    this.size += piece.length
    if (this.over) return
    if (this.size > this.max) {
      this.over = true
      this.pieces = []
      return
    }
    this.pieces.push(piece)
  }

  private take(): Line {
    const number = ++this.count
    const line: Line = this.over
      ? { number, over: true, bytes: this.size }
      : { number, over: false, pieces: this.pieces, bytes: this.size, first: firstByte(this.pieces) }
    this.pieces = []
    this.size = 0
    this.over = false
    return line
  }
}
