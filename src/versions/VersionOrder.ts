import { Effect, Result } from "effect"
import { ApkVersion } from "./ApkVersion.ts"
import { DpkgVersion } from "./DpkgVersion.ts"
import { MavenVersion } from "./MavenVersion.ts"
import { NuGetVersion } from "./NuGetVersion.ts"
import { CranVersion, HackageVersion } from "./NumericVersion.ts"
import { Pep440 } from "./Pep440.ts"
import { PhpVersion } from "./PhpVersion.ts"
import { PubVersion } from "./PubVersion.ts"
import { RpmVersion } from "./RpmVersion.ts"
import { RubyGemsVersion } from "./RubyGemsVersion.ts"
import { SemVer } from "./SemVer.ts"
import { InvalidVersion, UnsupportedEcosystem, VersionError } from "./VersionError.ts"
import { type Ordering, sign, type VersionScheme } from "./VersionScheme.ts"

export type { Ordering } from "./VersionScheme.ts"

/** Ecosystems by their OSV name (https://ossf.github.io/osv-schema/#defined-ecosystems), each with its order. */
const SCHEMES: ReadonlyArray<readonly [string, VersionScheme<any>]> = [
  ["npm", SemVer],
  ["crates.io", SemVer],
  ["Go", SemVer],
  ["Hex", SemVer],
  ["Pub", PubVersion],
  ["PyPI", Pep440],
  ["Maven", MavenVersion],
  ["RubyGems", RubyGemsVersion],
  ["NuGet", NuGetVersion],
  ["Packagist", PhpVersion],
  ["Debian", DpkgVersion],
  ["Ubuntu", DpkgVersion],
  ["Alpine", ApkVersion],
  ["Wolfi", ApkVersion],
  ["Chainguard", ApkVersion],
  ["Red Hat", RpmVersion],
  ["AlmaLinux", RpmVersion],
  ["Rocky Linux", RpmVersion],
  ["openSUSE", RpmVersion],
  ["SUSE", RpmVersion],
  ["Mageia", RpmVersion],
  ["CRAN", CranVersion],
  ["Bioconductor", CranVersion],
  ["Hackage", HackageVersion],
  ["GHC", HackageVersion]
]

export const SUPPORTED_ECOSYSTEMS: ReadonlyArray<string> = SCHEMES.map(([name]) => name)

const BY_NAME = new Map(SCHEMES.map(([name, scheme]) => [name.toLowerCase(), [name, scheme] as const]))

/** A version parsed by its ecosystem's rules; only the `VersionOrder` that parsed it can compare it. */
export interface ParsedVersion {
  readonly text: string
  readonly ecosystem: string
  /** @internal the scheme's own parsed form */
  readonly parts: unknown
}

/**
 * One ecosystem's order. `parse` once and `compareParsed` many times on hot paths (range
 * evaluation); `compare` for one-off comparisons of texts.
 */
export interface VersionOrder {
  /** The OSV spelling of the ecosystem, without any `:release` suffix. */
  readonly ecosystem: string
  /** The rules followed, as docs/versions.md names them. */
  readonly rules: string
  readonly parse: (text: string) => Result.Result<ParsedVersion, VersionError>
  readonly compareParsed: (a: ParsedVersion, b: ParsedVersion) => Ordering
  readonly compare: (a: string, b: string) => Result.Result<Ordering, VersionError>
}

const orderFor = (ecosystem: string, scheme: VersionScheme<unknown>): VersionOrder => {
  const parse = (text: string): Result.Result<ParsedVersion, VersionError> =>
    Result.match(scheme.parse(text), {
      onSuccess: (parts) => Result.succeed({ text, ecosystem, parts }),
      onFailure: (reason) =>
        Result.fail(new VersionError({ reason: new InvalidVersion({ ecosystem, version: text, reason }) }))
    })
  const compareParsed = (a: ParsedVersion, b: ParsedVersion) => sign(scheme.compare(a.parts, b.parts))
  return {
    ecosystem,
    rules: scheme.rules,
    parse,
    compareParsed,
    compare: (a, b) => Result.flatMap(parse(a), (x) => Result.map(parse(b), (y) => compareParsed(x, y)))
  }
}

const ORDERS = new Map([...BY_NAME].map(([key, [name, scheme]]) => [key, orderFor(name, scheme)]))

/**
 * The order of an ecosystem named as OSV names it. Names are matched without regard to case,
 * and OSV's release suffixes (`Debian:12`, `Alpine:v3.19`, `Ubuntu:22.04:LTS`) name the same
 * order as the bare ecosystem.
 */
export const versionOrder = (ecosystem: string): Result.Result<VersionOrder, VersionError> => {
  const colon = ecosystem.indexOf(":")
  const base = (colon < 0 ? ecosystem : ecosystem.slice(0, colon)).trim().toLowerCase()
  const order = ORDERS.get(base)
  return order !== undefined
    ? Result.succeed(order)
    : Result.fail(
      new VersionError({ reason: new UnsupportedEcosystem({ ecosystem, supported: SUPPORTED_ECOSYSTEMS }) })
    )
}

/** `a` against `b` in `ecosystem`'s order: `-1` lower, `0` the same version, `1` higher. */
export const compareVersions = (ecosystem: string, a: string, b: string): Effect.Effect<Ordering, VersionError> =>
  Effect.fromResult(Result.flatMap(versionOrder(ecosystem), (order) => order.compare(a, b)))
