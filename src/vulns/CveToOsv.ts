import { ecosystemOfCollection } from "./PackageNames.ts"

/**
 * A CVE Record Format 5.1 record (as vdb stores it, enrichment in
 * `containers.adp`) in the OSV schema, for records of sources that publish no
 * OSV (mitre, NVD, KEV, EUVD). The mapping is documented in docs/api.md,
 * "Records from other sources".
 */

/** The OSV schema version the converted records claim. */
export const OSV_SCHEMA_VERSION = "1.6.0"

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x)
const array = (x: unknown): ReadonlyArray<unknown> => Array.isArray(x) ? x : []
const str = (x: unknown): string | undefined => typeof x === "string" && x.trim() !== "" ? x : undefined

/** RFC 3339 with a zone, as the schema's `date-time` wants: CVE dates often omit the `Z`. */
const rfc3339 = (x: unknown): string | undefined => {
  const s = str(x)
  if (s === undefined) return undefined
  const time = Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(s) ? s : `${s}Z`)
  return Number.isNaN(time) ? undefined : new Date(time).toISOString()
}

const METRIC_TYPES: ReadonlyArray<readonly [string, string]> = [["cvssV4_0", "CVSS_V4"], ["cvssV3_1", "CVSS_V3"], [
  "cvssV3_0",
  "CVSS_V3"
], ["cvssV2_0", "CVSS_V2"]]

const severityOf = (metrics: ReadonlyArray<unknown>) =>
  metrics.flatMap((m) => {
    if (!isRecord(m)) return []
    for (const [key, type] of METRIC_TYPES) {
      const metric = m[key]
      if (isRecord(metric) && typeof metric.vectorString === "string") return [{ type, score: metric.vectorString }]
    }
    return []
  })

/** `versions` of one CVE `affected` entry as OSV ranges and enumerated versions. */
const versionsOf = (entry: Record<string, unknown>) => {
  const events: Array<Record<string, string>> = []
  const versions: Array<string> = []
  for (const v of array(entry.versions)) {
    if (!isRecord(v) || v.status !== "affected") continue
    const version = str(v.version)
    if (version === undefined || v.versionType === "git") continue
    const lessThan = str(v.lessThan)
    const lessThanOrEqual = str(v.lessThanOrEqual)
    if (lessThan === undefined && lessThanOrEqual === undefined) {
      versions.push(version)
      continue
    }
    const introduced = version === "*" || version === "0" ? "0" : version
    if (lessThan !== undefined && lessThan !== "*") events.push({ introduced }, { fixed: lessThan })
    else if (lessThanOrEqual !== undefined && lessThanOrEqual !== "*") {
      events.push({ introduced }, { last_affected: lessThanOrEqual })
    } else events.push({ introduced })
  }
  // `fixed` and `last_affected` may not share a range (the schema forbids it): one range per kind.
  const fixedKind = events.some((e) => "fixed" in e)
  const ranges = fixedKind && events.some((e) => "last_affected" in e)
    ? [pairsOf(events, "fixed"), pairsOf(events, "last_affected")]
    : events.length > 0
    ? [events]
    : []
  if (ranges.length === 0 && versions.length === 0 && entry.defaultStatus === "affected") {
    ranges.push([{ introduced: "0" }])
  }
  return { ranges: ranges.filter((r) => r.length > 0).map((r) => ({ type: "ECOSYSTEM", events: r })), versions }
}

/** The introduced/end pairs whose end is `kind` (open ones go with `fixed`). */
const pairsOf = (events: ReadonlyArray<Record<string, string>>, kind: "fixed" | "last_affected") => {
  const out: Array<Record<string, string>> = []
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!
    if (!("introduced" in event)) continue
    const next = events[i + 1]
    const end = next !== undefined && !("introduced" in next) ? next : undefined
    if (end === undefined ? kind === "fixed" : kind in end) out.push(event, ...(end === undefined ? [] : [end]))
  }
  return out
}

const affectedOf = (affected: ReadonlyArray<unknown>) =>
  affected.flatMap((entry) => {
    if (!isRecord(entry)) return []
    const collection = str(entry.collectionURL)
    const name = str(entry.packageName)
    const ecosystem = collection === undefined ? undefined : ecosystemOfCollection(collection)
    if (ecosystem === undefined || name === undefined) return []
    const { ranges, versions } = versionsOf(entry)
    return [{
      package: { ecosystem, name },
      ...(ranges.length > 0 ? { ranges } : {}),
      ...(versions.length > 0 ? { versions } : {})
    }]
  })

/** The converted record, or undefined when it has no identifier or no update time. */
export const cveToOsv = (source: string, record: Record<string, unknown>): Record<string, unknown> | undefined => {
  const meta = isRecord(record.cveMetadata) ? record.cveMetadata : {}
  const id = str(meta.cveId)
  const containers = isRecord(record.containers) ? record.containers : {}
  const cna = isRecord(containers.cna) ? containers.cna : {}
  const published = rfc3339(meta.datePublished)
  const modified = rfc3339(meta.dateUpdated) ?? published
  if (id === undefined || modified === undefined) return undefined
  const adp = array(containers.adp).filter(isRecord)
  const aliases = [...new Set(adp.flatMap((a) => array(a.x_aliases)).filter((a): a is string => typeof a === "string"))]
    .filter((a) => a !== id)
  const descriptions = array(cna.descriptions).filter(isRecord)
  const details = str((descriptions.find((d) => d.lang === "en") ?? descriptions[0])?.value)
  const references = array(cna.references).flatMap((r) =>
    isRecord(r) && str(r.url) !== undefined ? [{ type: "WEB", url: r.url }] : []
  )
  const cwes = array(cna.problemTypes).flatMap((p) => isRecord(p) ? array(p.descriptions) : [])
    .flatMap((d) => isRecord(d) && typeof d.cweId === "string" ? [d.cweId] : [])
  const severity = severityOf(array(cna.metrics))
  const affected = affectedOf(array(cna.affected))
  const title = str(cna.title)
  return {
    schema_version: OSV_SCHEMA_VERSION,
    id,
    modified,
    ...(published !== undefined ? { published } : {}),
    ...(aliases.length > 0 ? { aliases } : {}),
    ...(title !== undefined ? { summary: title } : {}),
    ...(details !== undefined ? { details } : {}),
    ...(severity.length > 0 ? { severity } : {}),
    ...(affected.length > 0 ? { affected } : {}),
    ...(references.length > 0 ? { references } : {}),
    database_specific: { source, ...(cwes.length > 0 ? { cwe_ids: [...new Set(cwes)] } : {}) }
  }
}
