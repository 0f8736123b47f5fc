import { Result } from "effect"
import { compareDigits, compareText, sign, type VersionScheme } from "./VersionScheme.ts"

interface ApkParts {
  readonly text: string
  readonly numbers: ReadonlyArray<string>
  readonly letter: string
  readonly suffixes: ReadonlyArray<SuffixToken>
  readonly revision: string
  /** What follows the last part apk understands (non-empty: not a valid apk version). */
  readonly rest: string
  /** Unreadable before the `-r` revision (after one, the rest only breaks ties). */
  readonly invalid: boolean
}

/** Suffix order: the pre-release ones, then "no suffix", then the post-release ones. */
const SUFFIXES = ["alpha", "beta", "pre", "rc", "", "cvs", "svn", "git", "hg", "p"]
const NO_SUFFIX = SUFFIXES.indexOf("")

const GRAMMAR =
  /^([0-9]+(?:\.[0-9]+)*)?([a-z])?((?:_(?:alpha|beta|pre|rc|cvs|svn|git|hg|p)[0-9]*)*)(~[0-9a-f]+)?(?:-r([0-9]*))?/

const parse = (text: string): ApkParts => {
  const m = GRAMMAR.exec(text)!
  const suffixes = [...(m[3] ?? "").matchAll(/_([a-z]+)([0-9]*)/g)].flatMap(([, name, n]): Array<SuffixToken> =>
    n === "" ? [["suffix", SUFFIXES.indexOf(name!)]] : [["suffix", SUFFIXES.indexOf(name!)], ["number", n!]]
  )
  return {
    text,
    numbers: m[1] === undefined ? [] : m[1].split("."),
    letter: m[2] ?? "",
    suffixes,
    revision: m[5] || "0",
    rest: text.slice(m[0].length),
    invalid: m[0].length < text.length && m[5] === undefined
  }
}

/**
 * apk (2.x, which OSV's Alpine fixtures come from) reads a number after a `.` that starts with
 * zeros as two tokens: minus the count of zeros, then the rest (`010` is −1 then 10). So such a
 * number is below any without leading zeros, more zeros are lower, then the rest counts
 * (`1.001 < 1.01 < 1.010 < 1.1`). The first number is read whole (`01 = 1`). A version with
 * more numbers is higher when the shared ones are equal (`1.2 < 1.2.0`).
 */
const zerosOf = (digits: string) => digits.length - digits.replace(/^0+/, "").length

const compareNumber = (x: string, y: string, first: boolean): number => {
  const xz = first ? 0 : zerosOf(x)
  const yz = first ? 0 : zerosOf(y)
  if (xz === 0 && yz === 0) return compareDigits(x, y)
  if (xz === 0 || yz === 0) return xz === 0 ? 1 : -1
  return sign(yz - xz) || compareDigits(x.slice(xz) || "0", y.slice(yz) || "0")
}

const compareNumbers = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): number => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = compareNumber(a[i]!, b[i]!, i === 0)
    if (c !== 0) return c
  }
  return sign(a.length - b.length)
}

/**
 * Suffixes as apk reads them, a token at a time: a suffix, then its number if it has one. Where
 * two versions' tokens differ in kind, apk ranks them: a pre-release suffix (`_rc`) < the end <
 * a number < a post-release suffix (`_p`). So `1.0_rc < 1.0_rc0 < 1.0_rc1 < 1.0_rc_p < 1.0`.
 */
type SuffixToken = readonly ["suffix", weight: number] | readonly ["number", digits: string]

const rank = (t: SuffixToken | undefined) => t === undefined ? 1 : t[0] === "number" ? 2 : t[1] < NO_SUFFIX ? 0 : 3

const compareSuffixes = (a: ReadonlyArray<SuffixToken>, b: ReadonlyArray<SuffixToken>): number => {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i]
    const y = b[i]
    const c = x !== undefined && y !== undefined && x[0] === y[0]
      ? (x[0] === "number" ? compareDigits(x[1], y[1] as string) : sign(x[1] - (y[1] as number)))
      : sign(rank(x) - rank(y))
    if (c !== 0) return c
  }
  return 0
}

/**
 * Alpine (and Wolfi, Chainguard): apk's order (apk-tools src/version.c; grammar in
 * apk-package(5): `number{.number}...{letter}{_suffix{number}}...{~hash}{-r#}`): numbers,
 * then an optional single lower-case letter (none is lowest), then suffixes (`_alpha <
 * _beta < _pre < _rc <` none `< _cvs < _svn < _git < _hg < _p`, each with its number), then
 * the `-r` revision. The commit hash does not order. Text apk cannot read after those parts
 * makes a version sort below the same valid version; two versions unreadable before their
 * revision compare as text. Both follow OSV's Alpine order, which its vectors pin down from
 * `apk version -t`.
 */
export const ApkVersion: VersionScheme<ApkParts> = {
  rules: "apk-tools",
  parse: (input) => {
    const text = input.trim()
    return text === "" ? Result.fail("is empty") : Result.succeed(parse(text))
  },
  compare: (a, b) => {
    if (a.invalid && b.invalid) return compareText(a.text, b.text)
    return compareNumbers(a.numbers, b.numbers) ||
      compareText(a.letter, b.letter) ||
      compareSuffixes(a.suffixes, b.suffixes) ||
      compareDigits(a.revision, b.revision) ||
      (b.rest === "" ? 0 : 1) - (a.rest === "" ? 0 : 1)
  }
}
