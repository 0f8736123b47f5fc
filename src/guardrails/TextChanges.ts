import { alignRegion } from "./RegionAlignment.ts"

/**
 * Where a rewritten text differs from the text it was made from, as
 * replacements of the original's characters. The splice keeps every other
 * character of a string literal in the client's own spelling (its escapes
 * included), so what it is told changed is all it re-encodes.
 */
export interface TextChange {
  /** Half-open range of UTF-16 units in the original text. */
  readonly start: number
  readonly end: number
  /** What stands there afterwards. */
  readonly text: string
}

/** An unchanged run at least this long ends a change (shorter agreements are taken for chance). */
const RUN = 8
/** A region found between two long runs is aligned cell by cell up to this many cells; beyond, it is one change. */
const MAX_CELLS = 1 << 20
/** The longest text looked for as inserted at one place (a redaction writes 10 characters; a removal none). */
const MAX_INSERT = 256
/** How far past a change's start its end is looked for, widening: beyond the last, the rest is one change. */
const WINDOWS = [64, 1024, 16384, 65536] as const

/**
 * The changes that turn `before` into `after`: the common head and tail are
 * kept, and from each difference on, the nearest place where the two agree
 * again for a run of characters (the fewest characters replaced) ends it.
 * Each such region (two matches close together, say, with the text between
 * them) is then aligned exactly (`alignRegion`), so that a single character
 * between two changes is kept. Linear in practice, and bounded: past a work
 * budget the rest of the difference is one change. Whatever is found, the
 * changes spell `after`.
 */
export const changesBetween = (before: string, after: string): Array<TextChange> => {
  if (before === after) return []
  const shorter = Math.min(before.length, after.length)
  let head = 0
  while (head < shorter && before.charCodeAt(head) === after.charCodeAt(head)) head++
  let tail = 0
  while (
    tail < shorter - head &&
    before.charCodeAt(before.length - 1 - tail) === after.charCodeAt(after.length - 1 - tail)
  ) tail++
  const differ = new Differ(before, after)
  differ.align(head, before.length - tail, head, after.length - tail)
  return differ.out
}

class Differ {
  readonly before: string
  readonly after: string
  readonly out: Array<TextChange> = []
  /** Comparisons (and cells) left to spend. */
  budget: number

  constructor(before: string, after: string) {
    this.before = before
    this.after = after
    this.budget = 32 * (before.length + after.length) + 65536
  }

  /** Aligns `before[x, xEnd)` with `after[y, yEnd)`. */
  align(x: number, xEnd: number, y: number, yEnd: number): void {
    const { after, before } = this
    for (;;) {
      while (x < xEnd && y < yEnd && before.charCodeAt(x) === after.charCodeAt(y)) {
        x++
        y++
      }
      if (x === xEnd && y === yEnd) return
      const found = x < xEnd && y < yEnd ? this.resync(x, xEnd, y, yEnd) : undefined
      const a = found === undefined ? xEnd - x : found[0]
      const b = found === undefined ? yEnd - y : found[1]
      const cells = (a + 1) * (b + 1)
      if (a === 0 || b === 0 || cells > MAX_CELLS || this.budget < cells) {
        this.out.push({ start: x, end: x + a, text: after.slice(y, y + b) })
      } else {
        this.budget -= cells
        alignRegion(before, after, x, x + a, y, y + b, this.out)
      }
      if (found === undefined) return
      x += a
      y += b
    }
  }

  /**
   * The smallest `a + b` such that `before` from `x + a` and `after` from
   * `y + b` agree for `RUN` characters (`before[x]` and `after[y]` differ).
   */
  resync(x: number, xEnd: number, y: number, yEnd: number): readonly [number, number] | undefined {
    const { after, before } = this
    const aRoom = xEnd - x - RUN
    const bRoom = Math.min(yEnd - y - RUN, MAX_INSERT)
    if (aRoom < 0 || bRoom < 0) return undefined
    let bestA = -1
    let bestB = -1
    let best = Number.POSITIVE_INFINITY
    for (const window of WINDOWS) {
      const aLimit = Math.min(window, aRoom)
      if (window === WINDOWS[0]) {
        // The common case, a short span replaced by a short text: compare in place.
        for (let b = 0; b <= bRoom && b < best; b++) {
          const first = after.charCodeAt(y + b)
          let a = 0
          for (; a <= aLimit && a + b < best; a++) {
            if (before.charCodeAt(x + a) === first && this.sameRun(x + a, y + b)) {
              best = a + b
              bestA = a
              bestB = b
            }
          }
          this.budget -= a + 1
        }
      } else {
        this.budget -= aLimit + bRoom
        if (this.budget < 0) return undefined
        // A long span: each run of `before` in the window indexed by its text, the nearest kept.
        const nearest = new Map<string, number>()
        for (let a = aLimit; a >= 0; a--) nearest.set(before.slice(x + a, x + a + RUN), a)
        for (let b = 0; b <= bRoom && b < best; b++) {
          const a = nearest.get(after.slice(y + b, y + b + RUN))
          if (a !== undefined && a + b < best) {
            best = a + b
            bestA = a
            bestB = b
          }
        }
      }
      // Final once no offset past the window could do better.
      if (bestA >= 0 && (best <= aLimit + 1 || aLimit === aRoom)) return [bestA, bestB]
      if (aLimit === aRoom || this.budget < 0) return undefined
    }
    return bestA >= 0 ? [bestA, bestB] : undefined
  }

  sameRun(x: number, y: number): boolean {
    for (let k = 1; k < RUN; k++) if (this.before.charCodeAt(x + k) !== this.after.charCodeAt(y + k)) return false
    return true
  }
}
