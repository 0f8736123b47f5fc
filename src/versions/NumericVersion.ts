import { Result } from "effect"
import { compareDigits, sign, type VersionScheme } from "./VersionScheme.ts"

/**
 * Numbers compared in turn; when one list is a prefix of the other, the longer is higher
 * (`1.0 < 1.0.0`): both R's `package_version` and Haskell's `Data.Version` order so.
 */
const compareNumbers = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): number => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = compareDigits(a[i]!, b[i]!)
    if (c !== 0) return c
  }
  return sign(a.length - b.length)
}

/**
 * CRAN (and Bioconductor): R's `package_version` (`?package_version` in base R): non-negative
 * integers separated by `.` or `-`, which weigh the same (`1.0-1 = 1.0.1`), compared as
 * integer lists. Anything else is refused, as R refuses it.
 */
export const CranVersion: VersionScheme<ReadonlyArray<string>> = {
  rules: "R package_version",
  parse: (input) => {
    const text = input.trim()
    return /^[0-9]+(?:[.-][0-9]+)*$/.test(text)
      ? Result.succeed(text.split(/[.-]/))
      : Result.fail("is not numbers separated by . or -")
  },
  compare: compareNumbers
}

/**
 * Hackage: Cabal's `Version` (Haskell PVP, https://pvp.haskell.org/): numbers separated by `.`,
 * compared as lists, so `1.0 < 1.0.0`. Anything else (tags, `-` suffixes) is refused, as
 * Cabal refuses it.
 */
export const HackageVersion: VersionScheme<ReadonlyArray<string>> = {
  rules: "Haskell PVP",
  parse: (input) => {
    const text = input.trim()
    return /^[0-9]+(?:\.[0-9]+)*$/.test(text)
      ? Result.succeed(text.split("."))
      : Result.fail("is not numbers separated by .")
  },
  compare: compareNumbers
}
