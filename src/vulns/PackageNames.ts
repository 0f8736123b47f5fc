/**
 * Package identity across sources: OSV ecosystem names, one spelling per
 * package name, and the CVE Record Format `collectionURL`s that name an
 * ecosystem (docs/api.md, "Package queries").
 */

/** OSV's defined ecosystems (https://ossf.github.io/osv-schema/#defined-ecosystems), as OSV spells them. */
const ECOSYSTEMS = [
  "AlmaLinux",
  "Alpine",
  "Android",
  "Bioconductor",
  "Bitnami",
  "Chainguard",
  "CRAN",
  "crates.io",
  "Debian",
  "GHC",
  "GitHub Actions",
  "Go",
  "Hackage",
  "Hex",
  "Linux",
  "Mageia",
  "Maven",
  "npm",
  "NuGet",
  "openSUSE",
  "OSS-Fuzz",
  "Packagist",
  "Photon OS",
  "Pub",
  "PyPI",
  "Red Hat",
  "Rocky Linux",
  "RubyGems",
  "SUSE",
  "SwiftURL",
  "Ubuntu",
  "Wolfi"
] as const

const BY_LOWER = new Map<string, string>(ECOSYSTEMS.map((e) => [e.toLowerCase(), e]))

/**
 * An ecosystem as OSV spells it, `Debian:12` kept with its release: the base
 * (before `:`) is matched without regard to case. Undefined for a name OSV does
 * not define.
 */
export const canonicalEcosystem = (ecosystem: string): { readonly full: string; readonly base: string } | undefined => {
  const trimmed = ecosystem.trim()
  const colon = trimmed.indexOf(":")
  const base = BY_LOWER.get((colon < 0 ? trimmed : trimmed.slice(0, colon)).toLowerCase())
  if (base === undefined) return undefined
  return { base, full: colon < 0 ? base : `${base}${trimmed.slice(colon)}` }
}

/** Ecosystems whose registries treat names without regard to case. */
const CASE_INSENSITIVE = new Set(["PyPI", "NuGet", "Packagist", "Hex", "Pub", "npm", "crates.io", "Hackage", "CRAN"])

/**
 * The one spelling of a package name the index keys on: PEP 503 for PyPI
 * (runs of `-`, `_`, `.` are one `-`, lower case); lower case where the
 * registry ignores case; Maven `group:artifact` (a `/` as purl writes it is a
 * `:`), Go module paths without a trailing `/`; npm scopes stay `@scope/name`.
 */
export const normalisePackageName = (base: string, name: string): string => {
  let n = name.trim()
  if (base === "PyPI") return n.toLowerCase().replace(/[-_.]+/g, "-")
  if (base === "Maven") n = n.replace("/", ":")
  if (base === "Go") n = n.replace(/\/+$/, "")
  return CASE_INSENSITIVE.has(base) ? n.toLowerCase() : n
}

/** The index key of a package, also what the response caches invalidate it by. */
export const packageKey = (base: string, normalisedName: string) => `pkg:${base}/${normalisedName}`

/**
 * CVE Record Format `collectionURL`s to OSV ecosystems, compared without
 * scheme case, `www.`, and trailing `/`. Distribution archives without a
 * release (Debian, Alpine) are left out: OSV's entries name a release.
 */
const COLLECTIONS: ReadonlyArray<readonly [string, string]> = [
  ["pypi.org", "PyPI"],
  ["pypi.python.org", "PyPI"],
  ["pypi.org/simple", "PyPI"],
  ["pypi.org/project", "PyPI"],
  ["npmjs.com", "npm"],
  ["registry.npmjs.org", "npm"],
  ["npmjs.org", "npm"],
  ["npmjs.com/package", "npm"],
  ["repo.maven.apache.org/maven2", "Maven"],
  ["repo1.maven.org/maven2", "Maven"],
  ["central.sonatype.com", "Maven"],
  ["search.maven.org", "Maven"],
  ["mvnrepository.com", "Maven"],
  ["pkg.go.dev", "Go"],
  ["proxy.golang.org", "Go"],
  ["golang.org", "Go"],
  ["crates.io", "crates.io"],
  ["crates.io/crates", "crates.io"],
  ["rubygems.org", "RubyGems"],
  ["rubygems.org/gems", "RubyGems"],
  ["nuget.org", "NuGet"],
  ["nuget.org/packages", "NuGet"],
  ["api.nuget.org/v3/index.json", "NuGet"],
  ["packagist.org", "Packagist"],
  ["packagist.org/packages", "Packagist"],
  ["hex.pm", "Hex"],
  ["hex.pm/packages", "Hex"],
  ["pub.dev", "Pub"],
  ["pub.dev/packages", "Pub"],
  ["hackage.haskell.org", "Hackage"],
  ["hackage.haskell.org/package", "Hackage"],
  ["cran.r-project.org", "CRAN"],
  ["cran.r-project.org/web/packages", "CRAN"],
  ["github.com/marketplace/actions", "GitHub Actions"],
  ["swiftpackageindex.com", "SwiftURL"]
]
const COLLECTION_MAP = new Map(COLLECTIONS)

/** The OSV ecosystem a CVE `collectionURL` names, if any. */
export const ecosystemOfCollection = (collectionURL: string): string | undefined => {
  const key = collectionURL.trim().toLowerCase().replace(/^https?:\/\//, "").replace(/^www\./, "").replace(/\/+$/, "")
  return COLLECTION_MAP.get(key)
}
