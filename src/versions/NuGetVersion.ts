import { Result } from "effect"
import { compareDigits, compareIdentifiers, type VersionScheme } from "./VersionScheme.ts"

interface NuGetParts {
  readonly numbers: ReadonlyArray<string>
  readonly labels: ReadonlyArray<string>
}

const VERSION = /^[vV]?([0-9]+(?:\.[0-9]+)*)(?:-([^+]*))?(?:\+.*)?$/

/**
 * NuGet (NuGet.Versioning `NuGetVersion`, `VersionComparer.Default`;
 * https://learn.microsoft.com/nuget/concepts/package-versioning): up to four numbers
 * (major.minor.patch.revision, missing ones are 0, so `1.0 = 1.0.0.0`), then release
 * labels: a release is above its pre-releases, labels compare as SemVer identifiers but
 * case-insensitively (NuGet upper-cases for its ordinal comparison); metadata after `+` is
 * ignored. More than four numbers are refused, as NuGet refuses them.
 */
export const NuGetVersion: VersionScheme<NuGetParts> = {
  rules: "NuGet.Versioning",
  parse: (text) => {
    const match = VERSION.exec(text.trim())
    if (match === null) return Result.fail("is not numbers separated by dots, with an optional -label and +metadata")
    const numbers = match[1]!.split(".")
    if (numbers.length > 4) return Result.fail("has more than four numbers")
    const labels = match[2] === undefined || match[2] === "" ? [] : match[2].toUpperCase().split(".")
    return Result.succeed({ numbers, labels })
  },
  compare: (a, b) => {
    for (let i = 0; i < 4; i++) {
      const c = compareDigits(a.numbers[i] ?? "0", b.numbers[i] ?? "0")
      if (c !== 0) return c
    }
    if (a.labels.length === 0 || b.labels.length === 0) return b.labels.length - a.labels.length
    return compareIdentifiers(a.labels, b.labels)
  }
}
