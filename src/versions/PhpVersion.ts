import { Result } from "effect"
import { compareDigits, sign, type VersionScheme } from "./VersionScheme.ts"

const isDigit = (c: string | undefined) => c !== undefined && c >= "0" && c <= "9"
const isAlnum = (c: string) => isDigit(c) || (c >= "a" && c <= "z") || (c >= "A" && c <= "Z")

/**
 * PHP's `php_canonicalize_version` (ext/standard/versioning.c): `-`, `_`, `+` and any other
 * character that is not a letter or digit become `.`, a `.` goes between a digit and a
 * non-digit, and runs of `.` collapse. `1.0rc1` → `1.0.rc.1`. Unlike PHP, `#` is kept as a
 * word (ranked as a number), as OSV's Packagist order keeps it (its vectors: `1.2.3.# = 1.2.3`).
 */
const canonical = (version: string) => {
  let out = version[0] ?? ""
  for (let i = 1; i < version.length; i++) {
    const c = version[i]!
    const previous = version[i - 1]!
    const dot = () => {
      if (!out.endsWith(".")) out += "."
    }
    if (c === "-" || c === "_" || c === "+") dot()
    else if (c !== "." && previous !== "." && isDigit(previous) !== isDigit(c)) {
      dot()
      out += c
    } else if (!isAlnum(c) && c !== "#") dot()
    else out += c
  }
  return out
}

/**
 * `compare_special_version_forms`: a word is ranked by the first of these it starts with
 * (`strncmp`), case-sensitively; a word that starts with none ranks below `dev`. `#` stands
 * for a number when a number meets a word.
 */
const FORMS: ReadonlyArray<readonly [string, number]> = [
  ["dev", 0],
  ["alpha", 1],
  ["a", 1],
  ["beta", 2],
  ["b", 2],
  ["RC", 3],
  ["rc", 3],
  ["#", 4],
  ["pl", 5],
  ["p", 5]
]
const rank = (form: string) => FORMS.find(([name]) => form.startsWith(name))?.[1] ?? -1
const compareForms = (a: string, b: string) => sign(rank(a) - rank(b))

const NUMBER = "#N#"

/**
 * PHP's `version_compare`, part by part over the canonical forms: numbers numerically (at
 * any size, where PHP's `strtol` would saturate), words by rank, a number above `dev`,
 * `alpha`, `beta`, `RC` and below `pl`/`p`. When one version has parts left over, a number
 * makes it higher and a word is ranked against a number (`1.0 > 1.0rc1`, `1.0 < 1.0pl1`).
 */
const versionCompare = (a: string, b: string): number => {
  if (a === "" || b === "") return a === b ? 0 : a === "" ? -1 : 1
  const x = (a.startsWith("#") ? a : canonical(a)).split(".")
  const y = (b.startsWith("#") ? b : canonical(b)).split(".")
  const common = Math.min(x.length, y.length)
  for (let i = 0; i < common; i++) {
    const p = x[i]!
    const q = y[i]!
    const c = isDigit(p[0]) && isDigit(q[0])
      ? compareDigits(p.match(/^[0-9]+/)![0], q.match(/^[0-9]+/)![0])
      : !isDigit(p[0]) && !isDigit(q[0])
      ? compareForms(p, q)
      : isDigit(p[0])
      ? compareForms(NUMBER, q)
      : compareForms(p, NUMBER)
    if (c !== 0) return c
  }
  if (x.length > common) {
    const next = x.slice(common).join(".")
    return isDigit(next[0]) ? 1 : versionCompare(next, NUMBER)
  }
  if (y.length > common) {
    const next = y.slice(common).join(".")
    return isDigit(next[0]) ? -1 : versionCompare(NUMBER, next)
  }
  return 0
}

/**
 * Packagist: Composer compares versions with PHP's `version_compare`. Leading `v`s and `V`s
 * are dropped, as OSV's fixture generator drops them (`ltrim($v, "vV")`). Other Composer
 * normalisation (branch names such as `dev-main`, `-stable`) is not applied: `dev-foo` ranks
 * as `dev`.
 */
export const PhpVersion: VersionScheme<string> = {
  rules: "PHP version_compare",
  parse: (text) => {
    const version = text.trim().replace(/^[vV]+/, "")
    return version === "" ? Result.fail("is empty") : Result.succeed(version)
  },
  compare: versionCompare
}
