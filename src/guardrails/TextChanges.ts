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
/** Failing that, a run this long close by: two matches a few characters apart. */
const SHORT_RUN = 3
/** Offsets up to this are tried one by one, nearest first. */
const BOX = 64
/** A region found between two long runs is aligned cell by cell up to this many cells; beyond, it is one change. */
const MAX_CELLS = 1 << 20
/** The longest text looked for as inserted at one place (a redaction writes 10 characters; a removal none). */
const MAX_INSERT = 256
/** How far past a change's start its end is looked for beyond `BOX`, widening: beyond the last, the rest is one change. */
const WINDOWS = [1024, 16384] as const

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
   * `y + b` agree for `RUN` characters (`before[x]` and `after[y]` differ),
   * looked for close by (`BOX`), or a `SHORT_RUN` close by with no `RUN` soon
   * after it (matches a few characters apart); failing both, a `RUN` further
   * on (a long match).
   */
  resync(x: number, xEnd: number, y: number, yEnd: number): readonly [number, number] | undefined {
    const aRoom = xEnd - x - RUN
    const bRoom = Math.min(yEnd - y - RUN, MAX_INSERT)
    const near = this.nearestInBox(x, xEnd, y, yEnd)
    if (near !== undefined) return near
    return aRoom >= 0 && bRoom >= 0 && (aRoom > BOX || bRoom > BOX)
      ? this.nearestInWindows(x, y, aRoom, bRoom)
      : undefined
  }

  /** Candidates with `a` and `b` up to `BOX`, by increasing `a + b`, compared in place. */
  nearestInBox(x: number, xEnd: number, y: number, yEnd: number): readonly [number, number] | undefined {
    if (this.budget < 0) return undefined
    const { after, before } = this
    const aBox = Math.min(BOX, xEnd - x - SHORT_RUN)
    const bBox = Math.min(BOX, yEnd - y - SHORT_RUN, MAX_INSERT)
    let shortA = -1
    let shortB = -1
    let until = aBox + bBox
    let spent = 0
    for (let d = 1; d <= until; d++) {
      for (let b = Math.max(0, d - aBox); b <= d && b <= bBox; b++) {
        const a = d - b
        spent++
        if (before.charCodeAt(x + a) !== after.charCodeAt(y + b)) continue
        const agree = this.agreement(x + a, xEnd, y + b, yEnd)
        if (agree >= RUN) {
          this.budget -= spent
          return [a, b]
        }
        if (agree >= SHORT_RUN && shortA < 0) {
          shortA = a
          shortB = b
          until = Math.min(until, d + RUN)
        }
      }
    }
    this.budget -= spent
    return shortA >= 0 ? [shortA, shortB] : undefined
  }

  /**
   * A long span: each run of `before` in a widening window indexed by its text, the nearest kept,
   * and compared with every run of `after` up to `MAX_INSERT` on.
   */
  nearestInWindows(x: number, y: number, aRoom: number, bRoom: number): readonly [number, number] | undefined {
    const { after, before } = this
    let bestA = -1
    let bestB = -1
    let best = Number.POSITIVE_INFINITY
    for (const window of WINDOWS) {
      const aLimit = Math.min(window, aRoom)
      // A slice and a map entry per offset: dearer than a comparison.
      this.budget -= 16 * (aLimit + bRoom)
      if (this.budget < 0) return undefined
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
      // Final once no offset past the window could do better.
      if (bestA >= 0 && (best <= aLimit + 1 || aLimit === aRoom)) return [bestA, bestB]
      if (aLimit === aRoom) return undefined
    }
    return bestA >= 0 ? [bestA, bestB] : undefined
  }

  /** How many characters (up to `RUN`) agree from `x` and `y`. */
  agreement(x: number, xEnd: number, y: number, yEnd: number): number {
    const limit = Math.min(RUN, xEnd - x, yEnd - y)
    let k = 1
    while (k < limit && this.before.charCodeAt(x + k) === this.after.charCodeAt(y + k)) k++
    return k
  }
}
