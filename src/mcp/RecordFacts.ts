import type { SourceRecord } from "../vulns/VulnStoreShapes.ts"

/**
 * Facts read out of the stored CVE 5.1 records (CNA container plus the ADP
 * enrichment containers), one list entry per source so an agent can see
 * which source said what. Everything is defensive: upstream records vary.
 */
type Json = Record<string, unknown>

const obj = (v: unknown): Json | undefined =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? v as Json : undefined
const arr = (v: unknown): ReadonlyArray<unknown> => Array.isArray(v) ? v : []
const str = (v: unknown): string | undefined => typeof v === "string" ? v : undefined
const num = (v: unknown): number | undefined => typeof v === "number" && Number.isFinite(v) ? v : undefined

const containersOf = (record: Json): ReadonlyArray<Json> => {
  const containers = obj(record.containers)
  if (containers === undefined) return []
  return [obj(containers.cna), ...arr(containers.adp).map(obj)].filter((c): c is Json => c !== undefined)
}

const withRecords = (records: ReadonlyArray<SourceRecord>) =>
  records.flatMap((r) => r.record === null ? [] : [{ source: r.source, identifier: r.identifier, record: r.record }])

export interface CvssScore {
  readonly source: string
  readonly version: string
  readonly baseScore: number | null
  readonly baseSeverity: string | null
  readonly vectorString: string | null
}

const CVSS_KEYS = [["cvssV4_0", "4.0"], ["cvssV3_1", "3.1"], ["cvssV3_0", "3.0"], ["cvssV2_0", "2.0"]] as const

export const cvssOf = (records: ReadonlyArray<SourceRecord>): ReadonlyArray<CvssScore> =>
  withRecords(records).flatMap(({ record, source }) =>
    containersOf(record).flatMap((c) =>
      arr(c.metrics).flatMap((m) =>
        CVSS_KEYS.flatMap(([key, version]) => {
          const cvss = obj(obj(m)?.[key])
          return cvss === undefined ? [] : [{
            source,
            version,
            baseScore: num(cvss.baseScore) ?? null,
            baseSeverity: str(cvss.baseSeverity) ?? null,
            vectorString: str(cvss.vectorString) ?? null
          }]
        })
      )
    )
  )

/** `metrics[].other` entries of one type (`ssvc`, `kev`), with the source that carried them. */
const otherMetrics = (records: ReadonlyArray<SourceRecord>, type: string) =>
  withRecords(records).flatMap(({ record, source }) =>
    containersOf(record).flatMap((c) =>
      arr(c.metrics).flatMap((m) => {
        const other = obj(obj(m)?.other)
        return other !== undefined && other.type === type ? [{ source, content: obj(other.content) ?? {} }] : []
      })
    )
  )

export const ssvcOf = (records: ReadonlyArray<SourceRecord>) =>
  otherMetrics(records, "ssvc").map(({ content, source }) => ({
    source,
    role: str(content.role) ?? null,
    version: str(content.version) ?? null,
    timestamp: str(content.timestamp) ?? null,
    options: arr(content.options).map((o) => obj(o) ?? {})
  }))

export const kevOf = (records: ReadonlyArray<SourceRecord>) =>
  otherMetrics(records, "kev").map(({ content, source }) => ({
    source,
    dateAdded: str(content.dateAdded) ?? null,
    dueDate: str(content.dueDate) ?? null,
    requiredAction: str(content.requiredAction) ?? null,
    knownRansomwareCampaignUse: str(content.knownRansomwareCampaignUse) ?? null,
    reference: str(content.reference) ?? null
  }))

export const epssOf = (records: ReadonlyArray<SourceRecord>) => {
  for (const { record } of withRecords(records)) {
    for (const c of containersOf(record)) {
      const e = obj(c.x_epss)
      if (e !== undefined) {
        return {
          score: num(e.score) ?? null,
          percentile: num(e.percentile) ?? null,
          date: str(e.date) ?? null,
          modelVersion: str(e.modelVersion) ?? null
        }
      }
    }
  }
  return null
}

export const cweOf = (records: ReadonlyArray<SourceRecord>) => {
  const seen = new Map<string, { cweId: string | null; description: string; sources: Array<string> }>()
  for (const { record, source } of withRecords(records)) {
    for (const c of containersOf(record)) {
      for (const p of arr(c.problemTypes)) {
        for (const d of arr(obj(p)?.descriptions)) {
          const entry = obj(d) ?? {}
          const cweId = str(entry.cweId) ?? null
          const description = str(entry.description) ?? ""
          const key = cweId ?? description
          if (key === "") continue
          const known = seen.get(key)
          if (known === undefined) seen.set(key, { cweId, description, sources: [source] })
          else if (!known.sources.includes(source)) known.sources.push(source)
        }
      }
    }
  }
  return [...seen.values()]
}

export const affectedOf = (records: ReadonlyArray<SourceRecord>) =>
  withRecords(records).flatMap(({ record, source }) =>
    containersOf(record).flatMap((c) =>
      arr(c.affected).map((a) => {
        const entry = obj(a) ?? {}
        return {
          source,
          vendor: str(entry.vendor) ?? null,
          product: str(entry.product) ?? str(entry.packageName) ?? null,
          collectionURL: str(entry.collectionURL) ?? null,
          defaultStatus: str(entry.defaultStatus) ?? null,
          versions: arr(entry.versions).map((v) => {
            const version = obj(v) ?? {}
            return {
              version: str(version.version) ?? null,
              status: str(version.status) ?? null,
              lessThan: str(version.lessThan) ?? null,
              lessThanOrEqual: str(version.lessThanOrEqual) ?? null,
              versionType: str(version.versionType) ?? null
            }
          })
        }
      })
    )
  )

export const referencesOf = (records: ReadonlyArray<SourceRecord>) => {
  const seen = new Map<string, { url: string; name: string | null; tags: Array<string>; sources: Array<string> }>()
  for (const { record, source } of withRecords(records)) {
    for (const c of containersOf(record)) {
      for (const r of arr(c.references)) {
        const entry = obj(r) ?? {}
        const url = str(entry.url)
        if (url === undefined) continue
        const known = seen.get(url)
        const tags = arr(entry.tags).flatMap((t) => typeof t === "string" ? [t] : [])
        if (known === undefined) seen.set(url, { url, name: str(entry.name) ?? null, tags, sources: [source] })
        else {
          if (!known.sources.includes(source)) known.sources.push(source)
          for (const t of tags) if (!known.tags.includes(t)) known.tags.push(t)
        }
      }
    }
  }
  return [...seen.values()]
}

export const descriptionsOf = (records: ReadonlyArray<SourceRecord>) =>
  withRecords(records).flatMap(({ record, source }) =>
    containersOf(record).flatMap((c) =>
      arr(c.descriptions).flatMap((d) => {
        const entry = obj(d) ?? {}
        const value = str(entry.value)
        return value === undefined ? [] : [{ source, lang: str(entry.lang) ?? null, value }]
      })
    )
  )

export const titleOf = (record: Json | null): string | null => {
  if (record === null) return null
  const cna = obj(obj(record.containers)?.cna)
  return str(cna?.title) ?? null
}
