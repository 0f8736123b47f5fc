/**
 * The exact alignment of a small region of two texts, where what changed is
 * known to lie (two matches close together and the text between them, say).
 */

/** A replacement of `before[start, end)` by `text` (a `TextChange`). */
interface Replacement {
  readonly start: number
  readonly end: number
  readonly text: string
}

// Costs of an alignment, in halves: a character written anew (deleted or inserted) costs 2, and
// each change costs 3 more. Keeping one character between two changes (saving 4) beats merging
// them, so the text between two close matches stays; among alignments keeping as much, the one
// with fewer changes wins, so a match's text is not taken for the text beside it.
const CHAR = 2
const OPEN = 3
const KEEP = 1
const FROM_KEEP = 2
const INSERT = 4
const FROM_KEEP_H = 8
/** Unreachable: above any cost a region within the cell cap can reach. */
const INF = 1 << 29

/**
 * The cheapest alignment of `before[x0, x1)` with `after[y0, y1)` (a region that starts and
 * ends beside kept text, both sides non-empty), by dynamic programming over its
 * `(x1 - x0 + 1) * (y1 - y0 + 1)` cells: the caller bounds their number.
 */
export const alignRegion = (
  before: string,
  after: string,
  x0: number,
  x1: number,
  y0: number,
  y1: number,
  out: Array<Replacement>
): void => {
  const rows = x1 - x0
  const cols = y1 - y0
  if (!shareACharacter(before, x0, x1, after, y0, y1)) {
    // The usual region, one match and what replaced it ("123-45-6789", "[REDACTED]"): one change.
    out.push({ start: x0, end: x1, text: after.slice(y0, y1) })
    return
  }
  const width = cols + 1
  // Per cell: how the cheapest alignment ending there with a kept character (K) or inside a
  // change (H) got there. K: KEEP set when reachable, FROM_KEEP when it came from K.
  // H: INSERT when its last step consumed `after`, FROM_KEEP_H when that step opened the change.
  const how = new Uint8Array((rows + 1) * width)
  // Two rows of both costs: K of the previous and current row, then H of both.
  const cost = new Int32Array(4 * width)
  for (let i = 0; i <= rows; i++) {
    const keepPrev = ((i + 1) & 1) * width
    const keepRow = (i & 1) * width
    const hunkPrev = 2 * width + keepPrev
    const hunkRow = 2 * width + keepRow
    const unit = i > 0 ? before.charCodeAt(x0 + i - 1) : -1
    for (let j = 0; j <= cols; j++) {
      let flags = 0
      let keep = INF
      if (i === 0 && j === 0) keep = 0
      else if (i > 0 && j > 0 && unit === after.charCodeAt(y0 + j - 1)) {
        const k = cost[keepPrev + j - 1]!
        const h = cost[hunkPrev + j - 1]!
        keep = k <= h ? k : h
        flags = KEEP | (k <= h ? FROM_KEEP : 0)
      }
      let hunk = INF
      if (i > 0) {
        const k = cost[keepPrev + j]! + OPEN
        const h = cost[hunkPrev + j]!
        hunk = (k < h ? k : h) + CHAR
        if (k < h) flags |= FROM_KEEP_H
      }
      if (j > 0) {
        const k = cost[keepRow + j - 1]! + OPEN
        const h = cost[hunkRow + j - 1]!
        const inserted = (k < h ? k : h) + CHAR
        if (inserted < hunk) {
          hunk = inserted
          flags = (flags & (KEEP | FROM_KEEP)) | INSERT | (k < h ? FROM_KEEP_H : 0)
        }
      }
      cost[keepRow + j] = keep
      cost[hunkRow + j] = hunk
      how[i * width + j] = flags
    }
  }
  // Back from the end (the region ends beside kept text, so in either state), collecting changes.
  const found: Array<Replacement> = []
  let i = rows
  let j = cols
  const last = (rows & 1) * width
  let inHunk = cost[2 * width + last + cols]! < cost[last + cols]!
  let endI = -1
  let endJ = -1
  while (i > 0 || j > 0) {
    const flags = how[i * width + j]!
    if (inHunk) {
      if (endI < 0) {
        endI = i
        endJ = j
      }
      const opened = (flags & FROM_KEEP_H) !== 0
      if ((flags & INSERT) !== 0) j--
      else i--
      if (opened) {
        found.push({ start: x0 + i, end: x0 + endI, text: after.slice(y0 + j, y0 + endJ) })
        endI = -1
        inHunk = false
      }
    } else {
      inHunk = (flags & FROM_KEEP) === 0
      i--
      j--
    }
  }
  if (endI >= 0) found.push({ start: x0, end: x0 + endI, text: after.slice(y0, y0 + endJ) })
  for (let k = found.length - 1; k >= 0; k--) out.push(found[k]!)
}

/** Whether some character of `before[x0, x1)` is in `after[y0, y1)` (else nothing can be kept). */
const shareACharacter = (before: string, x0: number, x1: number, after: string, y0: number, y1: number): boolean => {
  for (let y = y0; y < y1; y++) {
    const unit = after.charCodeAt(y)
    for (let x = x0; x < x1; x++) if (before.charCodeAt(x) === unit) return true
  }
  return false
}
