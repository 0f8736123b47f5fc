import { Predicate } from "effect"
import type { ExploitSummaryKey, RecordCounts, SourceName } from "../../schema/Source.ts"
import { splitContent, summaryKeyOf } from "./ExploitSummary.ts"
import type { KnownExploited } from "./Normalised.ts"
import { type OsvForm, osvFormOf } from "./OsvForm.ts"
import { type RecordText, recordText } from "./RecordText.ts"
import type { NormalisedItem, RawKey } from "./VulnStoreShapes.ts"

/** Ingest sources whose items become records of a spec-1 source (`vulnrichment` records are `mitre` ones). */
export const RECORD_SOURCE_OF: Readonly<Record<string, SourceName>> = {
  "mitre": "mitre",
  "vulnrichment": "mitre",
  "nist-nvd": "nist-nvd",
  "vulncheck-nvd": "vulncheck-nvd",
  "cisa-kev": "cisa-kev",
  "vulncheck-kev": "vulncheck-kev",
  "ghsa": "ghsa",
  "osv": "osv",
  "euvd": "euvd"
}
export const RECORD_INGEST_SOURCES = Object.keys(RECORD_SOURCE_OF)

export const ZERO_COUNTS: RecordCounts = {
  references: 0,
  problemTypes: 0,
  metrics: 0,
  affected: 0,
  impacts: 0,
  descriptions: 0,
  scorecards: 0
}

export interface RecordRow {
  readonly source: SourceName
  readonly identifier: string
  readonly origin: RawKey
  /** The record as stored: its JSON text and EPSS splice points. */
  readonly body: RecordText
  readonly counts: RecordCounts
  readonly gcve: boolean
  readonly knownExploited: KnownExploited | null
  /** Newest wins when two items normalise to one (source, identifier); ISO dates compare as text. */
  readonly rank: string
  /** The record in the OSV schema and its package index entries (`vuln_osv`, `vuln_packages`). */
  readonly osv: OsvForm | undefined
}

export interface AliasRow {
  readonly identifier: string
  readonly alias: string
  readonly origin: RawKey
}

export interface EpssRow {
  readonly cve: string
  readonly score: number
  readonly percentile: number
  readonly date: string
  readonly modelVersion: string
  readonly origin: RawKey
}

export interface ExploitRow {
  readonly uuid: string
  readonly origin: RawKey
  readonly cveId: string
  readonly source: string
  readonly summaryKey: ExploitSummaryKey
  readonly type: string
  readonly url: string | null
  readonly title: string | null
  readonly createdAt: number | null
  readonly details: Record<string, Record<string, unknown>>
  readonly content: string | undefined
}

export interface Rows {
  readonly records: ReadonlyArray<RecordRow>
  readonly aliases: ReadonlyArray<AliasRow>
  readonly epss: ReadonlyArray<EpssRow>
  readonly exploits: ReadonlyArray<ExploitRow>
  /** Every identifier whose lookup may now answer differently. */
  readonly touched: ReadonlyArray<string>
}

/** A record's update time for `rank`: `dateUpdated`, else `datePublished`, else empty. */
export const rankOf = (record: Record<string, unknown>): string => {
  const meta = record.cveMetadata
  if (!Predicate.isObject(meta)) return ""
  const date = "dateUpdated" in meta && Predicate.isString(meta.dateUpdated)
    ? meta.dateUpdated
    : "datePublished" in meta && Predicate.isString(meta.datePublished)
    ? meta.datePublished
    : ""
  return date
}

/**
 * Flattens phase-2 output into table rows, de-duplicated on each table's key
 * (the last occurrence wins), so one multi-row statement per table can take
 * the whole batch.
 */
export const toRows = (items: ReadonlyArray<NormalisedItem>): Rows => {
  const records = new Map<string, RecordRow>()
  const aliases = new Map<string, AliasRow>()
  const epss = new Map<string, EpssRow>()
  const exploits = new Map<string, ExploitRow>()
  const touched = new Set<string>()
  for (const item of items) {
    const origin: RawKey = { source: item.source, identifier: item.identifier, hash: item.hash }
    const originKey = `${item.source}\u0000${item.identifier}`
    touched.add(item.identifier)
    for (const out of item.outputs) {
      switch (out.kind) {
        case "record": {
          records.set(`${out.source}\u0000${out.identifier}\u0000${originKey}`, {
            source: out.source,
            identifier: out.identifier,
            origin,
            body: out.body ?? recordText(out.record),
            counts: out.counts,
            gcve: out.gcve,
            knownExploited: out.knownExploited ?? null,
            rank: out.updatedAt ?? rankOf(out.record),
            // The workers always set `osv` (undefined when the record has no OSV form): their record is parsed only on access.
            osv: "osv" in out ? out.osv : osvFormOf(out.source, out.record, out.osvDocument)
          })
          touched.add(out.identifier)
          for (const alias of out.aliases) {
            if (alias === out.identifier) continue
            // One row per pair: readers walk the alias graph both ways (migration 0560).
            aliases.set(`${out.identifier}\u0000${alias}\u0000${originKey}`, {
              identifier: out.identifier,
              alias,
              origin
            })
            touched.add(alias)
          }
          break
        }
        case "epss": {
          for (const score of out.scores) {
            epss.set(score.cve, { ...score, origin })
            touched.add(score.cve)
          }
          break
        }
        case "exploits": {
          for (const exploit of out.exploits) {
            const summaryKey = out.summaryKey ?? summaryKeyOf(exploit.source, exploit.details)
            const { content, details } = splitContent(exploit.details, summaryKey, exploit.raw)
            exploits.set(`${exploit.uuid}\u0000${originKey}`, {
              uuid: exploit.uuid,
              origin,
              cveId: exploit.cveId,
              source: exploit.source,
              summaryKey,
              type: exploit.type,
              url: exploit.url ?? null,
              title: exploit.title ?? null,
              createdAt: exploit.createdAt ?? null,
              details,
              content
            })
            touched.add(exploit.cveId)
          }
          break
        }
      }
    }
  }
  // A package's queries answer differently once a record naming it changes.
  for (const record of records.values()) for (const entry of record.osv?.packages ?? []) touched.add(entry.key)
  return {
    records: [...records.values()],
    aliases: [...aliases.values()],
    epss: [...epss.values()],
    exploits: [...exploits.values()],
    touched: [...touched]
  }
}
