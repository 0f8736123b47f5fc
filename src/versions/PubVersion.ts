import { compareSemVerParts, parseSemVerParts, type SemVerParts } from "./SemVer.ts"
import { compareIdentifiers, type VersionScheme } from "./VersionScheme.ts"

/**
 * Dart's pub (package `pub_semver`, `Version.compareTo`): SemVer 2.0.0 precedence, then,
 * unlike SemVer, build metadata counts: a version without a build is below the same version
 * with one (`1.0.0 < 1.0.0+1`), and builds compare identifier by identifier as pre-releases
 * do (`1.2.3+9 < 1.2.3+a`). Parsing is as lenient as for SemVer (see SemVer.ts).
 */
export const PubVersion: VersionScheme<SemVerParts> = {
  rules: "Dart pub_semver",
  parse: parseSemVerParts,
  compare: (a, b) => {
    const c = compareSemVerParts(a, b)
    if (c !== 0) return c
    if (a.build.length === 0 || b.build.length === 0) return a.build.length - b.build.length
    return compareIdentifiers(a.build, b.build)
  }
}
