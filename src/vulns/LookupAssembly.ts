import type { RecordCounts, SourceName } from "../../schema/Source.ts"
import { type EpssEntry, isCve } from "./Epss.ts"
import { type RecordText, textWithEpss } from "./RecordText.ts"
import { RECORD_SOURCE_OF, ZERO_COUNTS } from "./StoreRows.ts"
import type { Lookup, SourceRecord } from "./VulnStore.ts"

/** A stored record as both stores read it: the body only when asked for. */
export interface FoundRecord {
  readonly source: SourceName
  readonly identifier: string
  readonly body: RecordText | null
  readonly counts: RecordCounts
  readonly gcve: boolean
  readonly enrichedAt: Date
  readonly fetchedAt: Date
}

export interface ProcessingItem {
  readonly source: string
  readonly identifier: string
  readonly fetchedAt: Date
}

/**
 * A source record whose `record` is parsed from `recordJson` on first access
 * (an enumerable getter, so it still reads like a plain member): `/info`
 * never reads it and `/vuln` writes the text through, so most lookups never
 * parse a record at all.
 */
const lazyRecord = (found: FoundRecord, json: string | null): SourceRecord => {
  let parsed: Record<string, unknown> | null | undefined
  return {
    source: found.source,
    identifier: found.identifier,
    get record() {
      if (parsed === undefined) parsed = json === null ? null : JSON.parse(json) as Record<string, unknown>
      return parsed
    },
    recordJson: json,
    processing: false,
    counts: found.counts,
    gcve: found.gcve,
    fetchedAt: found.fetchedAt,
    enrichedAt: found.enrichedAt
  }
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
const byKey = (a: { source: string; identifier: string }, b: { source: string; identifier: string }) =>
  compare(a.source, b.source) || compare(a.identifier, b.identifier)

/**
 * Shared by both stores: records (sorted by source, identifier) with EPSS
 * merged, then a processing placeholder per source that has only a raw item.
 * A record takes its own identifier's score, else the score of the one CVE
 * the query reaches (GHSA/OSV/EUVD records of that CVE).
 */
export const assemble = (
  query: string,
  ids: ReadonlyArray<string>,
  records: Array<FoundRecord>,
  processing: Array<ProcessingItem>,
  scores: ReadonlyMap<string, EpssEntry>
): Lookup => {
  const cves = ids.filter((id) => isCve(id) && scores.has(id))
  const fallback = cves.length === 1 ? scores.get(cves[0]!) : undefined
  const out: Array<SourceRecord> = records.sort(byKey).map((r) =>
    lazyRecord(r, r.body === null ? null : textWithEpss(r.body, scores.get(r.identifier) ?? fallback))
  )
  const covered = new Set(out.map((r) => `${r.source}\u0000${r.identifier}`))
  for (const raw of processing.sort(byKey)) {
    const source = RECORD_SOURCE_OF[raw.source]
    if (source === undefined || covered.has(`${source}\u0000${raw.identifier}`)) continue
    covered.add(`${source}\u0000${raw.identifier}`)
    out.push({
      source,
      identifier: raw.identifier,
      record: null,
      recordJson: null,
      processing: true,
      counts: ZERO_COUNTS,
      gcve: false,
      fetchedAt: raw.fetchedAt,
      enrichedAt: null
    })
  }
  return { aliases: ids.filter((id) => id !== query).sort(), records: out }
}
