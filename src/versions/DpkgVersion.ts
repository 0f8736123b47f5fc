import { Result } from "effect"
import { compareDigits, sign, type VersionScheme } from "./VersionScheme.ts"

interface DpkgParts {
  readonly epoch: string
  readonly upstream: string
  readonly revision: string
}

/**
 * `order()` of dpkg's lib/dpkg/version.c: `~` below everything, even the end of the string;
 * then the end and digits; then letters; then every other character, above letters.
 */
const order = (c: number) => {
  if (Number.isNaN(c) || (c >= 48 && c <= 57)) return 0
  if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122)) return c
  if (c === 126) return -1
  return c + 256
}

const isDigitAt = (s: string, i: number) => {
  const c = s.charCodeAt(i)
  return c >= 48 && c <= 57
}

/** dpkg's `verrevcmp`: alternate non-digit runs (by `order`) and digit runs (numerically). */
const verrevcmp = (a: string, b: string): number => {
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    while ((i < a.length && !isDigitAt(a, i)) || (j < b.length && !isDigitAt(b, j))) {
      const c = order(a.charCodeAt(i)) - order(b.charCodeAt(j))
      if (c !== 0) return c
      i++
      j++
    }
    const si = i
    const sj = j
    while (isDigitAt(a, i)) i++
    while (isDigitAt(b, j)) j++
    const c = compareDigits(a.slice(si, i) || "0", b.slice(sj, j) || "0")
    if (c !== 0) return c
  }
  return 0
}

/**
 * Debian (and Ubuntu): `dpkg --compare-versions` (deb-version(7),
 * https://www.debian.org/doc/debian-policy/ch-controlfields.html#version): `[epoch:]upstream[-revision]`;
 * the epoch numerically (missing is 0), then upstream and revision by `verrevcmp`, where
 * `~` sorts before anything (`1.0~rc1 < 1.0`) and a missing revision equals `0`. What dpkg
 * refuses as bad syntax (an epoch that is not a number, an empty upstream version or revision,
 * white space) is refused; what it only warns about (a first character that is not a digit,
 * characters outside the policy's set) is compared, as `dpkg --compare-versions` does.
 */
export const DpkgVersion: VersionScheme<DpkgParts> = {
  rules: "dpkg",
  parse: (input) => {
    const text = input.trim()
    if (text === "") return Result.fail("is empty")
    const colon = text.indexOf(":")
    const epoch = colon < 0 ? "0" : text.slice(0, colon)
    if (!/^[0-9]+$/.test(epoch)) return Result.fail("has an epoch that is not a number")
    const rest = text.slice(colon + 1)
    const hyphen = rest.lastIndexOf("-")
    const upstream = hyphen < 0 ? rest : rest.slice(0, hyphen)
    const revision = hyphen < 0 ? "" : rest.slice(hyphen + 1)
    if (upstream === "") return Result.fail("has an empty upstream version")
    if (hyphen >= 0 && revision === "") return Result.fail("has an empty revision after its last -")
    if (/\s/.test(text)) return Result.fail("has embedded white space")
    return Result.succeed({ epoch, upstream, revision })
  },
  compare: (a, b) =>
    sign(compareDigits(a.epoch, b.epoch) || verrevcmp(a.upstream, b.upstream) || verrevcmp(a.revision, b.revision))
}
