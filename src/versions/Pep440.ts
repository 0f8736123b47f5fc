import { Result } from "effect"
import { type LegacyParts, LegacyPythonVersion } from "./LegacyPythonVersion.ts"
import { compareDigits, compareNumberLists, compareText, isDigits, sign, type VersionScheme } from "./VersionScheme.ts"

/** A labelled number (`a1`, `post2`, `dev0`), or absent. */
type Tagged = readonly [label: string, number: string] | undefined

interface Pep440Parts {
  readonly kind: "pep440"
  readonly epoch: string
  readonly release: ReadonlyArray<string>
  readonly pre: Tagged
  readonly post: Tagged
  readonly dev: Tagged
  readonly local: ReadonlyArray<string> | undefined
}

type PythonVersion = Pep440Parts | LegacyParts

/** PEP 440 Appendix B's regular expression (as `packaging.version.VERSION_PATTERN`), case-insensitive. */
const VERSION = new RegExp(
  "^\\s*v?(?:(?:([0-9]+)!)?([0-9]+(?:\\.[0-9]+)*)" +
    "([-_.]?(alpha|a|beta|b|preview|pre|c|rc)[-_.]?([0-9]+)?)?" +
    "((?:-([0-9]+))|(?:[-_.]?(post|rev|r)[-_.]?([0-9]+)?))?" +
    "([-_.]?(dev)[-_.]?([0-9]+)?)?)" +
    "(?:\\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?\\s*$",
  "i"
)

/** PEP 440's normalisation of spellings: `alpha` is `a`, `c`/`pre`/`preview` are `rc`, `r`/`rev` are `post`. */
const SPELLING: Readonly<Record<string, string>> = {
  alpha: "a",
  beta: "b",
  c: "rc",
  pre: "rc",
  preview: "rc",
  r: "post",
  rev: "post"
}

const tagged = (label: string | undefined, number: string | undefined): Tagged => {
  if (label !== undefined) {
    const lower = label.toLowerCase()
    return [SPELLING[lower] ?? lower, number ?? "0"]
  }
  // The implicit post-release spelling `1.0-1`.
  return number !== undefined ? ["post", number] : undefined
}

const parsePep440 = (text: string): Pep440Parts | undefined => {
  const m = VERSION.exec(text)
  if (m === null) return undefined
  return {
    kind: "pep440",
    epoch: m[1] ?? "0",
    release: m[2]!.split("."),
    pre: tagged(m[4], m[5]),
    post: tagged(m[8], m[7] ?? m[9]),
    dev: tagged(m[11], m[12]),
    local: m[13]?.toLowerCase().split(/[-_.]/)
  }
}

/** Absent sorts as −∞ or +∞ depending on the segment, as in `packaging`'s sort key. */
const compareTagged = (a: Tagged, b: Tagged, absent: -1 | 1): number => {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? absent : -absent
  return compareText(a[0], b[0]) || compareDigits(a[1], b[1])
}

/**
 * Local labels (PEP 440 "Local version identifiers"): segment by segment, numbers numerically
 * and above any alphanumeric segment, which compare as (lower-cased) text; a label that
 * extends another is higher; no label is below any label.
 */
const compareLocal = (a: ReadonlyArray<string> | undefined, b: ReadonlyArray<string> | undefined): number => {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? -1 : 1
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i]!
    const y = b[i]!
    const c = isDigits(x) && isDigits(y)
      ? compareDigits(x, y)
      : isDigits(x)
      ? 1
      : isDigits(y)
      ? -1
      : compareText(x, y)
    if (c !== 0) return c
  }
  return sign(a.length - b.length)
}

/**
 * `packaging`'s `_cmpkey`: a dev release with neither pre- nor post-release sorts below every
 * pre-release of its release (`1.0.dev0 < 1.0a0`), which is why it counts as a pre of −∞.
 */
const preKey = (
  v: Pep440Parts
): Tagged | "lowest" => (v.pre === undefined && v.post === undefined && v.dev !== undefined ? "lowest" : v.pre)

const comparePep440 = (a: Pep440Parts, b: Pep440Parts): number => {
  const ap = preKey(a)
  const bp = preKey(b)
  return compareDigits(a.epoch, b.epoch) ||
    // Trailing zeros do not count: 1.0 == 1.0.0 (compareNumberLists pads with 0).
    compareNumberLists(a.release, b.release) ||
    (ap === "lowest" || bp === "lowest"
      ? (ap === bp ? 0 : ap === "lowest" ? -1 : 1)
      : compareTagged(ap, bp, 1)) ||
    compareTagged(a.post, b.post, -1) ||
    compareTagged(a.dev, b.dev, 1) ||
    compareLocal(a.local, b.local)
}

/**
 * PyPI: PEP 440 (https://peps.python.org/pep-0440/), ordered as the reference implementation
 * `packaging.version.Version` orders it. A text that is not PEP 440 is a "legacy" version,
 * ordered as `packaging` did before 22.0 (`LegacyVersion`): below every PEP 440 version.
 * OSV's PyPI data still names such releases, so they are ordered rather than refused.
 */
export const Pep440: VersionScheme<PythonVersion> = {
  rules: "PEP 440",
  parse: (text) => {
    if (text.trim() === "") return Result.fail("is empty")
    return Result.succeed(parsePep440(text) ?? LegacyPythonVersion.parse(text))
  },
  compare: (a, b) => {
    if (a.kind === "legacy" || b.kind === "legacy") {
      if (a.kind !== b.kind) return a.kind === "legacy" ? -1 : 1
      return LegacyPythonVersion.compare(a as LegacyParts, b as LegacyParts)
    }
    return comparePep440(a, b)
  }
}
