import type { IngestSource, ItemProblem, Normalised, UpstreamItem } from "../Upstream.ts"
import { enrichmentContainer } from "./adp.ts"
import { buildRecord, type ReferenceInput } from "./cve5.ts"
import { canonicalId, osvProvider, recordAliases, recordCveId } from "./ids.ts"
import { type DocContext, itemOf, problem, type Read } from "./item.ts"
import { metricFromVector } from "./metrics.ts"
import { asArray, asString, distinct, isRecord, text, timestamp } from "./text.ts"

/** OSV JSON (GHSA, PYSEC, RUSTSEC, GO, ...): one file, an array, or NDJSON lines; PyPA YAML too. */

const OSV_ID = /^[A-Za-z][A-Za-z0-9]*-[A-Za-z0-9.:_-]+$/

export function* items(doc: unknown, ctx: DocContext): Iterable<Read> {
  if (Array.isArray(doc)) {
    for (const [i, d] of doc.entries()) yield* one(d, ctx, i)
    return
  }
  if (isRecord(doc) && Array.isArray(doc.vulns)) {
    for (const [i, d] of doc.vulns.entries()) yield* one(d, ctx, i)
    return
  }
  yield* one(doc, ctx, undefined)
}

function* one(doc: unknown, ctx: DocContext, index: number | undefined): Iterable<Read> {
  const at = index === undefined ? ctx.position : `${ctx.position}#${index}`
  if (!isRecord(doc) || typeof doc.id !== "string") return yield problem(at, "not an OSV record: no id")
  if (!OSV_ID.test(doc.id)) return yield problem(at, `invalid OSV id ${JSON.stringify(doc.id)}`)
  if (doc.modified === undefined) return yield problem(at, `${doc.id}: OSV record without modified`)
  for (const k of ["modified", "published", "withdrawn"] as const) {
    if (doc[k] !== undefined && timestamp(doc[k]) === undefined && !String(doc[k]).startsWith("0001-01-01")) {
      return yield problem(at, `${doc.id}: impossible date ${k}=${JSON.stringify(doc[k])}`)
    }
  }
  yield itemOf(ctx, doc.id, doc, index === undefined ? {} : { index })
}

/** Ecosystem (the part before `:`) to the CVE 5 `collectionURL` and version type. */
const ECOSYSTEMS: Record<string, readonly [string, string]> = {
  "PyPI": ["https://pypi.org", "python"],
  "crates.io": ["https://crates.io", "semver"],
  "Go": ["https://pkg.go.dev", "semver"],
  "npm": ["https://www.npmjs.com", "semver"],
  "Maven": ["https://repo.maven.apache.org/maven2", "maven"],
  "RubyGems": ["https://rubygems.org", "gem"],
  "NuGet": ["https://www.nuget.org", "nuget"],
  "Packagist": ["https://packagist.org", "composer"],
  "Hex": ["https://hex.pm", "semver"],
  "Pub": ["https://pub.dev", "semver"],
  "GitHub Actions": ["https://github.com", "semver"],
  "SwiftURL": ["https://swiftpackageindex.com", "semver"],
  "Hackage": ["https://hackage.haskell.org", "custom"],
  "CRAN": ["https://cran.r-project.org", "custom"],
  "Debian": ["https://packages.debian.org", "dpkg"],
  "Ubuntu": ["https://packages.ubuntu.com", "dpkg"],
  "Alpine": ["https://pkgs.alpinelinux.org", "apk"],
  "Linux": ["https://git.kernel.org", "git"]
}

const rangesToVersions = (ranges: ReadonlyArray<unknown>, ecoType: string): Array<Record<string, unknown>> => {
  const out: Array<Record<string, unknown>> = []
  for (const r of ranges) {
    if (!isRecord(r)) continue
    const versionType = r.type === "SEMVER" ? "semver" : r.type === "GIT" ? "git" : ecoType
    let start: string | undefined
    for (const e of asArray(r.events)) {
      if (!isRecord(e)) continue
      const introduced = asString(e.introduced)
      if (introduced !== undefined) {
        if (start !== undefined) out.push({ version: start, status: "affected", versionType, lessThanOrEqual: "*" })
        start = introduced === "0.0.0-0" ? "0" : introduced
        continue
      }
      const fixed = asString(e.fixed)
      const lastAffected = asString(e.last_affected)
      const limit = asString(e.limit)
      if (start === undefined) continue
      if (fixed !== undefined) out.push({ version: start, status: "affected", versionType, lessThan: fixed })
      else if (lastAffected !== undefined) {
        out.push({ version: start, status: "affected", versionType, lessThanOrEqual: lastAffected })
      } else if (limit !== undefined) out.push({ version: start, status: "affected", versionType, lessThan: limit })
      else continue
      start = undefined
    }
    if (start !== undefined) out.push({ version: start, status: "affected", versionType, lessThanOrEqual: "*" })
  }
  return out
}

const affectedOf = (affected: ReadonlyArray<unknown>): Array<Record<string, unknown>> =>
  affected.flatMap((a) => {
    if (!isRecord(a)) return []
    const pkg = isRecord(a.package) ? a.package : {}
    const ecosystem = asString(pkg.ecosystem) ?? ""
    const [collectionURL, ecoType] = ECOSYSTEMS[ecosystem.split(":")[0]!] ?? [undefined, "custom"]
    const name = text(pkg.name, 2048)
    const ranges = rangesToVersions(asArray(a.ranges), ecoType)
    const listed = ranges.length > 0
      ? []
      : asArray(a.versions).flatMap((v) =>
        typeof v === "string" && v.trim() !== "" ? [{ version: v.trim(), status: "affected" }] : []
      )
    const seen = new Set<string>()
    const versions = [...ranges, ...listed].filter((v) => {
      const k = JSON.stringify(v)
      return seen.has(k) ? false : (seen.add(k), true)
    })
    const gitRepo = asArray(a.ranges).map((r) => isRecord(r) ? asString(r.repo) : undefined).find((r) =>
      r !== undefined
    )
    const ident = name !== undefined && collectionURL !== undefined
      ? { collectionURL, packageName: name }
      : { vendor: ecosystem !== "" ? ecosystem : "n/a", product: name ?? gitRepo ?? "n/a" }
    return [{
      ...ident,
      ...(name !== undefined && collectionURL !== undefined && ecosystem !== ecosystem.split(":")[0]
        ? { platforms: [ecosystem] }
        : {}),
      ...(versions.length > 0 ? { versions, defaultStatus: "unaffected" } : { defaultStatus: "unknown" })
    }]
  })

const REFERENCE_TYPES: Record<string, string> = {
  ADVISORY: "vendor-advisory",
  ARTICLE: "media-coverage",
  DETECTION: "signature",
  DISCUSSION: "mailing-list",
  REPORT: "issue-tracking",
  FIX: "patch",
  INTRODUCED: "x_introduced",
  GIT: "x_git",
  PACKAGE: "product",
  EVIDENCE: "exploit",
  WEB: "x_web"
}

/** OSV aliases, canonicalised; `related`/upstream ids are not aliases (OSV rules). */
export const osvAliases = (doc: Record<string, unknown>): Array<string> =>
  distinct(asArray(doc.aliases).flatMap((a) => typeof a === "string" && a.trim() !== "" ? [canonicalId(a)] : []))
    .filter((a) => a !== doc.id)

export const normalise = (item: UpstreamItem, upstream: IngestSource): ReadonlyArray<Normalised> | ItemProblem => {
  const doc = item.parsed
  if (!isRecord(doc) || typeof doc.id !== "string") return problem(item.position, "OSV item without id")
  const id = doc.id
  const source = upstream === "ghsa" ? "ghsa" : "osv"
  const aliases = osvAliases(doc)
  const cveId = recordCveId(id, aliases)
  const dbs = isRecord(doc.database_specific) ? doc.database_specific : {}
  const cwes = [...asArray(dbs.cwe_ids), ...asArray(dbs.cwes).map((c) => isRecord(c) ? c.cweId : c)]
    .filter((c): c is string => typeof c === "string")
  const metrics = asArray(doc.severity).flatMap((s) => {
    if (!isRecord(s) || typeof s.score !== "string") return []
    const version = s.type === "CVSS_V2" ? "2.0" : s.type === "CVSS_V4" ? "4.0" : undefined
    const m = metricFromVector(s.score, version)
    return m === undefined ? [] : [m]
  })
  const references: Array<ReferenceInput> = asArray(doc.references).flatMap((r) =>
    isRecord(r) && typeof r.url === "string"
      ? [{
        url: r.url,
        tags: typeof r.type === "string" ? [REFERENCE_TYPES[r.type] ?? `x_${r.type.toLowerCase()}`] : []
      }]
      : []
  )
  const modified = timestamp(doc.modified)
  const published = timestamp(doc.published)
  const generatedAt = modified ?? published
  const adp = enrichmentContainer({
    source,
    upstream,
    enrichmentSource: source === "ghsa" ? "github/advisory-database (OSV)" : `OSV (${id.split("-")[0]})`,
    generatedAt,
    aliases: recordAliases(id, cveId, aliases),
    dataCollected: [
      "descriptions",
      "affected",
      "references",
      "aliases",
      ...(metrics.length > 0 ? ["metrics"] : []),
      ...(cwes.length > 0 ? ["problemTypes"] : [])
    ],
    extra: {
      ...(typeof dbs.severity === "string" ? { x_severity: dbs.severity } : {}),
      ...(asArray(doc.related).length > 0 ? { x_related: distinct(asArray(doc.related).map(String)) } : {}),
      ...(typeof doc.withdrawn === "string" ? { x_withdrawn: doc.withdrawn } : {})
    }
  })
  const summary = asString(doc.summary)
  const details = asString(doc.details)
  const { record, counts } = buildRecord({
    id,
    cveId,
    source,
    assigner: osvProvider(id),
    datePublished: published,
    dateUpdated: modified,
    cna: {
      title: summary,
      descriptions: details !== undefined
        ? [{ value: details, markdown: true }]
        : summary !== undefined
        ? [{ value: summary }]
        : [],
      affected: affectedOf(asArray(doc.affected)),
      references,
      problemTypes: cwes.map((cwe) => ({ cwe })),
      metrics
    },
    adp
  })
  return [{
    kind: "record",
    source,
    upstream,
    identifier: id,
    ...(generatedAt !== undefined ? { updatedAt: generatedAt } : {}),
    record,
    osvDocument: doc,
    aliases,
    counts,
    gcve: false
  }]
}
