import type { Result } from "effect"

/** How two versions stand: `-1` the first is lower, `0` the same version, `1` the first is higher. */
export type Ordering = -1 | 0 | 1

/**
 * One ecosystem's version grammar and order. `parse` says why a text is not a version
 * (one short phrase, without the text itself); `compare` orders two parsed versions.
 * Parsing once and comparing many times is what range evaluation needs.
 */
export interface VersionScheme<T> {
  /** The rules followed, as the docs name them ("SemVer 2.0.0", "dpkg", ...). */
  readonly rules: string
  readonly parse: (text: string) => Result.Result<T, string>
  readonly compare: (a: T, b: T) => number
}

export const sign = (n: number): Ordering => (n < 0 ? -1 : n > 0 ? 1 : 0)

/** Code-unit order, as C's `strcmp`, Go's `strings.Compare` and Ruby's `String#<=>` on ASCII. */
export const compareText = (a: string, b: string): Ordering => (a < b ? -1 : a > b ? 1 : 0)

const DIGITS = /^[0-9]+$/

export const isDigits = (text: string) => DIGITS.test(text)

/**
 * Two runs of ASCII digits by numeric value, at any length: versions carry numbers past
 * 2^53 (dates with times, the 30-digit cases of OSV's vectors), which `Number` would round.
 */
export const compareDigits = (a: string, b: string): Ordering => {
  const x = stripZeros(a)
  const y = stripZeros(b)
  return x.length !== y.length ? sign(x.length - y.length) : compareText(x, y)
}

const stripZeros = (digits: string) => {
  let i = 0
  while (i < digits.length - 1 && digits.charCodeAt(i) === 48) i++
  return digits.slice(i)
}

/** Two lists of digit runs, element by element; a missing element counts as `0`. */
export const compareNumberLists = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): Ordering => {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const c = compareDigits(a[i] ?? "0", b[i] ?? "0")
    if (c !== 0) return c
  }
  return 0
}

/**
 * SemVer 2.0.0 §11.4 precedence of dot-separated identifiers: digits-only identifiers
 * numerically and below any other, others in ASCII order, and a longer list higher when
 * every identifier of the shorter one is equal. NuGet and Pub order theirs the same way.
 */
export const compareIdentifiers = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): Ordering => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i]!
    const y = b[i]!
    const xn = isDigits(x)
    const yn = isDigits(y)
    const c = xn && yn ? compareDigits(x, y) : xn ? -1 : yn ? 1 : compareText(x, y)
    if (c !== 0) return c
  }
  return sign(a.length - b.length)
}
