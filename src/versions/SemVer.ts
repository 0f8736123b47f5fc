import { Result } from "effect"
import { compareDigits, compareIdentifiers, type VersionScheme } from "./VersionScheme.ts"

/** A version split as SemVer 2.0.0 splits it: three numbers, pre-release identifiers, build identifiers. */
export interface SemVerParts {
  readonly core: readonly [string, string, string]
  readonly pre: ReadonlyArray<string>
  readonly build: ReadonlyArray<string>
}

/**
 * https://semver.org/spec/v2.0.0.html, read as OSV reads versions in its SemVer ecosystems
 * (npm, crates.io, Go, Hex, ...): a leading `v` (Go's module versions always have one, OSV
 * records drop it) is ignored; a missing minor or patch counts as 0 (`0` = `0.0.0`); numbers
 * have no size limit and leading zeros are their value. Text after the numbers that starts
 * with neither `-` nor `+` (`1.36.0rc1`, `1.2.3.4`) is read as a pre-release, as OSV does,
 * so it sorts below the release.
 */
const CORE = /^[vV]?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?/

export const parseSemVerParts = (text: string): Result.Result<SemVerParts, string> => {
  const core = CORE.exec(text)
  if (core === null) return Result.fail("does not start with a number")
  if (/[\s\u0000-\u001f]/.test(text)) return Result.fail("contains white space or a control character")
  let rest = text.slice(core[0].length)
  const plus = rest.indexOf("+")
  const build = plus < 0 ? "" : rest.slice(plus + 1)
  rest = plus < 0 ? rest : rest.slice(0, plus)
  // `-` is SemVer's separator; OSV also takes a bare `.` or nothing (`1.2.3.4`, `1.0.0rc1`).
  const pre = rest.startsWith("-") || rest.startsWith(".") ? rest.slice(1) : rest
  return Result.succeed({
    core: [core[1]!, core[2] ?? "0", core[3] ?? "0"],
    pre: pre === "" ? [] : pre.split("."),
    build: build === "" ? [] : build.split(".")
  })
}

/** Precedence (§11): the three numbers, then a release above any of its pre-releases. */
export const compareSemVerParts = (a: SemVerParts, b: SemVerParts): number => {
  for (let i = 0; i < 3; i++) {
    const c = compareDigits(a.core[i]!, b.core[i]!)
    if (c !== 0) return c
  }
  if (a.pre.length === 0 || b.pre.length === 0) return b.pre.length - a.pre.length
  return compareIdentifiers(a.pre, b.pre)
}

/**
 * SemVer 2.0.0 precedence: build metadata is ignored (§10), so `v2.0.0+incompatible` (Go's
 * marker for a module without go.mod) equals `v2.0.0`. Go's pseudo-versions
 * (`v0.0.0-20191109021931-daa7c04131f5`) are pre-releases whose timestamp orders them.
 */
export const SemVer: VersionScheme<SemVerParts> = {
  rules: "SemVer 2.0.0",
  parse: parseSemVerParts,
  compare: compareSemVerParts
}
