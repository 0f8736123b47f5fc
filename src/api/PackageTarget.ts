import { Result } from "effect"
import { PackageURL } from "packageurl-js"
import { BadRequest } from "../../schema/ErrorBody.ts"
import { canonicalEcosystem, normalisePackageName } from "../vulns/PackageNames.ts"

/** What one package query asks about, resolved to the index's keys. */
export interface PackageTarget {
  /** OSV base ecosystem: the index key. */
  readonly base: string
  /** Set when the query named a release (`Debian:12`): only entries of that release match. */
  readonly release: string | undefined
  readonly name: string
  readonly version: string | undefined
}

/** purl types to OSV ecosystems (docs/api.md); `deb`, `apk` and `rpm` take the ecosystem from the namespace. */
const PURL_TYPES: Readonly<Record<string, string>> = {
  pypi: "PyPI",
  npm: "npm",
  maven: "Maven",
  golang: "Go",
  cargo: "crates.io",
  gem: "RubyGems",
  nuget: "NuGet",
  composer: "Packagist",
  hex: "Hex",
  pub: "Pub",
  cran: "CRAN",
  hackage: "Hackage",
  swift: "SwiftURL",
  bitnami: "Bitnami",
  githubactions: "GitHub Actions",
  github: "GitHub Actions"
}
const DISTRIBUTIONS: Readonly<Record<string, string>> = {
  debian: "Debian",
  ubuntu: "Ubuntu",
  alpine: "Alpine",
  wolfi: "Wolfi",
  chainguard: "Chainguard",
  redhat: "Red Hat",
  almalinux: "AlmaLinux",
  rocky: "Rocky Linux",
  "rocky-linux": "Rocky Linux",
  opensuse: "openSUSE",
  suse: "SUSE",
  mageia: "Mageia"
}

const bad = (message: string) => Result.fail(new BadRequest({ message }))

const fromPurl = (
  purl: string
): Result.Result<{ ecosystem: string; name: string; version: string | undefined }, BadRequest> => {
  let parsed: PackageURL
  try {
    parsed = PackageURL.fromString(purl)
  } catch (cause) {
    return bad(`invalid purl: ${cause instanceof Error ? cause.message.slice(0, 200) : "unreadable"}`)
  }
  const namespace = parsed.namespace ?? undefined
  const version = parsed.version ?? undefined
  if (parsed.type === "deb" || parsed.type === "apk" || parsed.type === "rpm") {
    const ecosystem = namespace === undefined ? undefined : DISTRIBUTIONS[namespace.toLowerCase()]
    if (ecosystem === undefined) {
      return bad(`purl type ${parsed.type} with namespace ${JSON.stringify(namespace ?? "")} names no OSV ecosystem`)
    }
    return Result.succeed({ ecosystem, name: parsed.name, version })
  }
  const ecosystem = PURL_TYPES[parsed.type]
  if (ecosystem === undefined) return bad(`purl type ${JSON.stringify(parsed.type)} names no OSV ecosystem`)
  const name = namespace === undefined
    ? parsed.name
    : ecosystem === "Maven"
    ? `${namespace}:${parsed.name}`
    : `${namespace}/${parsed.name}`
  return Result.succeed({ ecosystem, name, version })
}

/**
 * A query's package (`{ecosystem, name}` or `{purl}`) and version as the index
 * keys them. A purl's version stands in for a missing `version`; both at once
 * is refused, as OSV does.
 */
export const packageTarget = (
  pkg: {
    readonly ecosystem?: string | undefined
    readonly name?: string | undefined
    readonly purl?: string | undefined
  },
  version: string | undefined
): Result.Result<PackageTarget, BadRequest> => {
  let ecosystem: string
  let name: string
  let at = version
  if (pkg.purl !== undefined) {
    if (pkg.ecosystem !== undefined || pkg.name !== undefined) {
      return bad("package: give either purl or ecosystem and name, not both")
    }
    const resolved = fromPurl(pkg.purl)
    if (Result.isFailure(resolved)) return Result.fail(resolved.failure)
    if (resolved.success.version !== undefined && version !== undefined) {
      return bad("version given both in the purl and in version")
    }
    ecosystem = resolved.success.ecosystem
    name = resolved.success.name
    at = version ?? resolved.success.version
  } else {
    if (pkg.ecosystem === undefined || pkg.name === undefined) {
      return bad("package: ecosystem and name (or purl) are required")
    }
    ecosystem = pkg.ecosystem
    name = pkg.name
  }
  const eco = canonicalEcosystem(ecosystem)
  if (eco === undefined) return bad(`ecosystem ${JSON.stringify(ecosystem.slice(0, 64))} is not supported`)
  if (name.trim() === "") return bad("package name is empty")
  return Result.succeed({
    base: eco.base,
    release: eco.full === eco.base ? undefined : eco.full,
    name: normalisePackageName(eco.base, name),
    version: at
  })
}
