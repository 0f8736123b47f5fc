import { Result } from "effect"
import { compareDigits, compareText, isDigits, type VersionScheme } from "./VersionScheme.ts"

/** `Gem::Version::ANCHORED_VERSION_PATTERN`. */
const VERSION = /^\s*([0-9]+(?:\.[0-9a-zA-Z]+)*(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?)?\s*$/

/** Trailing zeros dropped from the numeric run and from the run after the first word, as `canonical_segments`. */
const canonicalSegments = (text: string): ReadonlyArray<string> => {
  const segments = text.match(/[0-9]+|[a-z]+/gi) ?? []
  const firstWord = segments.findIndex((s) => !isDigits(s))
  const numbers = firstWord < 0 ? segments : segments.slice(0, firstWord)
  const words = firstWord < 0 ? [] : segments.slice(firstWord)
  const trim = (run: ReadonlyArray<string>) => {
    let end = run.length
    while (end > 0 && /^0+$/.test(run[end - 1]!)) end--
    return run.slice(0, end)
  }
  return [...trim(numbers), ...trim(words)]
}

/**
 * RubyGems' `Gem::Version#<=>` (rubygems/version.rb): `-` is read as `.pre.`, the text is cut
 * into digit runs and letter runs; a letter run makes a pre-release, below any number
 * (`1.0.a < 1.0`); numbers compare numerically, words as text (case-sensitive); missing
 * segments count as 0. An empty text is `0`. `Gem::Version.new` refuses a text outside its
 * pattern (`1beta`); OSV orders such texts by the same runs (its vectors: `1 > 1beta`), and
 * so does vdb, but a text that does not start with a number is refused.
 */
export const RubyGemsVersion: VersionScheme<ReadonlyArray<string>> = {
  rules: "RubyGems Gem::Version",
  parse: (text) => {
    if (VERSION.test(text)) return Result.succeed(canonicalSegments(text.trim().replaceAll("-", ".pre.")))
    // Outside the pattern (`1beta`): cut into runs all the same, as OSV does, rather than refuse.
    return /^\s*[0-9]/.test(text)
      ? Result.succeed(canonicalSegments(text))
      : Result.fail("does not start with a number")
  },
  compare: (a, b) => {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const x = a[i] ?? "0"
      const y = b[i] ?? "0"
      const xn = isDigits(x)
      const yn = isDigits(y)
      const c = xn && yn ? compareDigits(x, y) : xn ? 1 : yn ? -1 : compareText(x, y)
      if (c !== 0) return c
    }
    return 0
  }
}
