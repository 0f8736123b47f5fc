import { Result } from "effect"
import { compareDigits, compareText, sign, type VersionScheme } from "./VersionScheme.ts"

interface RpmParts {
  readonly epoch: string
  readonly version: string
  readonly release: string | undefined
}

const isDigit = (c: string | undefined) => c !== undefined && c >= "0" && c <= "9"
const isAlpha = (c: string | undefined) => c !== undefined && ((c >= "a" && c <= "z") || (c >= "A" && c <= "Z"))
const isSeparator = (c: string | undefined) => c !== undefined && !isDigit(c) && !isAlpha(c) && c !== "~" && c !== "^"

/**
 * rpm's `rpmvercmp` (rpmio/rpmvercmp.c, rpm 4.15+): runs of digits and runs of ASCII letters
 * are compared in turn, anything else only separates them; digits numerically and above
 * letters; letters as text. `~` sorts before anything, even the end (`1.0~rc1 < 1.0`); `^`
 * sorts after the end but before anything else (`1.0 < 1.0^git1 < 1.0.1`).
 */
export const rpmvercmp = (a: string, b: string): number => {
  if (a === b) return 0
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    while (isSeparator(a[i])) i++
    while (isSeparator(b[j])) j++
    if (a[i] === "~" || b[j] === "~") {
      if (a[i] !== "~") return 1
      if (b[j] !== "~") return -1
      i++
      j++
      continue
    }
    if (a[i] === "^" || b[j] === "^") {
      if (i >= a.length) return -1
      if (j >= b.length) return 1
      if (a[i] !== "^") return 1
      if (b[j] !== "^") return -1
      i++
      j++
      continue
    }
    if (i >= a.length || j >= b.length) break
    const numeric = isDigit(a[i])
    const within = numeric ? isDigit : isAlpha
    const si = i
    const sj = j
    while (within(a[i])) i++
    while (within(b[j])) j++
    // A number against letters (an empty run of digits on b's side): the number is newer.
    if (j === sj) return numeric ? 1 : -1
    const x = a.slice(si, i)
    const y = b.slice(sj, j)
    const c = numeric ? compareDigits(x, y) : compareText(x, y)
    if (c !== 0) return c
  }
  if (i >= a.length && j >= b.length) return 0
  return i >= a.length ? -1 : 1
}

/**
 * Red Hat (and other rpm distributions): `[epoch:]version[-release]` as rpm's `parseEVR`
 * splits it (the epoch is the digits before a `:`, the release follows the last `-`),
 * each part by `rpmvercmp`. A version without a release is below the same version with any
 * release (`1 < 1-0`), as OSV orders them; rpm itself skips the release when either lacks one.
 */
export const RpmVersion: VersionScheme<RpmParts> = {
  rules: "rpm rpmvercmp",
  parse: (input) => {
    const text = input.trim()
    if (text === "") return Result.fail("is empty")
    const epochMatch = /^([0-9]*):/.exec(text)
    const epoch = epochMatch === null ? "0" : epochMatch[1] || "0"
    const rest = epochMatch === null ? text : text.slice(epochMatch[0].length)
    const hyphen = rest.lastIndexOf("-")
    return Result.succeed({
      epoch,
      version: hyphen < 0 ? rest : rest.slice(0, hyphen),
      release: hyphen < 0 ? undefined : rest.slice(hyphen + 1)
    })
  },
  compare: (a, b) => {
    const c = rpmvercmp(a.epoch, b.epoch) || rpmvercmp(a.version, b.version)
    if (c !== 0 || a.release === b.release) return sign(c)
    if (a.release === undefined || b.release === undefined) return a.release === undefined ? -1 : 1
    return sign(rpmvercmp(a.release, b.release))
  }
}
