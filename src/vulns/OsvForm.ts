import { cveToOsv } from "./CveToOsv.ts"
import { canonicalEcosystem, normalisePackageName, packageKey } from "./PackageNames.ts"

/** One event of an OSV range, as the schema has it (exactly one member). */
export type RangeEvent =
  | { readonly introduced: string }
  | { readonly fixed: string }
  | { readonly last_affected: string }
  | { readonly limit: string }

export interface AffectedRange {
  readonly type: "SEMVER" | "ECOSYSTEM" | "GIT"
  readonly events: ReadonlyArray<RangeEvent>
}

/** What the package index keeps of one `affected` entry: enough to evaluate a version without the record. */
export interface PackageEntry {
  /** OSV base ecosystem (`Debian`), what the index is keyed on. */
  readonly base: string
  /** As the record wrote it, release included (`Debian:12`). */
  readonly ecosystem: string
  readonly name: string
  readonly key: string
  readonly ranges: ReadonlyArray<AffectedRange>
  readonly versions: ReadonlyArray<string>
}

/** A record in the OSV schema, as stored beside its CVE 5.1 form. */
export interface OsvForm {
  readonly text: string
  readonly modified: string
  readonly packages: ReadonlyArray<PackageEntry>
}

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x)
const strings = (x: unknown): Array<string> =>
  Array.isArray(x) ? x.filter((v): v is string => typeof v === "string") : []
const RANGE_TYPES = new Set(["SEMVER", "ECOSYSTEM", "GIT"])
const EVENT_KEYS = ["introduced", "fixed", "last_affected", "limit"] as const

const rangesOf = (ranges: unknown): Array<AffectedRange> =>
  (Array.isArray(ranges) ? ranges : []).flatMap((r) => {
    if (!isRecord(r) || typeof r.type !== "string" || !RANGE_TYPES.has(r.type)) return []
    const events = (Array.isArray(r.events) ? r.events : []).flatMap((e): Array<RangeEvent> => {
      if (!isRecord(e)) return []
      const key = EVENT_KEYS.find((k) => typeof e[k] === "string")
      return key === undefined ? [] : [{ [key]: e[key] as string } as RangeEvent]
    })
    return [{ type: r.type as AffectedRange["type"], events }]
  })

/** The index entries of an OSV record's `affected`: one per named package in an ecosystem OSV defines. */
export const packagesOf = (osv: Record<string, unknown>): Array<PackageEntry> => {
  const seen = new Map<string, PackageEntry>()
  for (const a of Array.isArray(osv.affected) ? osv.affected : []) {
    if (!isRecord(a) || !isRecord(a.package)) continue
    const { ecosystem, name } = a.package
    if (typeof ecosystem !== "string" || typeof name !== "string" || name.trim() === "") continue
    const eco = canonicalEcosystem(ecosystem)
    if (eco === undefined) continue
    const normalised = normalisePackageName(eco.base, name)
    const entry: PackageEntry = {
      base: eco.base,
      ecosystem: eco.full,
      name: normalised,
      key: packageKey(eco.base, normalised),
      ranges: rangesOf(a.ranges),
      versions: strings(a.versions)
    }
    // Two entries for one package (two ranges blocks) stay two: either may match.
    seen.set(`${entry.key}\u0000${seen.size}`, entry)
  }
  return [...seen.values()]
}

/**
 * The OSV form of a normalised record: an OSV or GHSA record as its upstream
 * wrote it; any other source's CVE 5.1 record converted (`CveToOsv.ts`).
 */
export const osvFormOf = (
  source: string,
  record: Record<string, unknown>,
  osvDocument: Record<string, unknown> | undefined
): OsvForm | undefined => {
  const osv = osvDocument ?? cveToOsv(source, record)
  if (osv === undefined || typeof osv.id !== "string") return undefined
  return {
    text: JSON.stringify(osv),
    modified: typeof osv.modified === "string" ? osv.modified : "",
    packages: packagesOf(osv)
  }
}
