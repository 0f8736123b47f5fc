import type { RecordCounts, SourceName } from "../../schema/Source.ts"
import { type EpssEntry, isCve } from "./Epss.ts"
import { mergeSource, needsRewrite } from "./RecordMerge.ts"
import { type RecordText, textWithEpss } from "./RecordText.ts"
import { RECORD_SOURCE_OF, ZERO_COUNTS } from "./StoreRows.ts"
import type { Lookup, SourceRecord } from "./VulnStoreShapes.ts"

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

const latest = (a: Date, b: Date) => (a.getTime() >= b.getTime() ? a : b)

/**
 * One `SourceRecord` per source from the records read with bodies (sorted):
 * a source with one record that needs no change keeps its stored text; several
 * records of one source, or a native record answering a CVE query, go through
 * `mergeSource` (src/vulns/RecordMerge.ts).
 */
const perSource = (
  query: string,
  found: ReadonlyArray<FoundRecord>,
  texts: ReadonlyArray<string>
): Array<SourceRecord> => {
  const out: Array<SourceRecord> = []
  for (let i = 0; i < found.length;) {
    let end = i + 1
    while (end < found.length && found[end]!.source === found[i]!.source) end++
    const first = found[i]!
    if (end === i + 1 && !needsRewrite(query, { identifier: first.identifier, json: texts[i]! })) {
      out.push(lazyRecord(first, texts[i]!))
    } else {
      const group = found.slice(i, end)
      const merged = mergeSource(query, group.map((r, n) => ({ identifier: r.identifier, json: texts[i + n]! })))
      const base = group.find((r) => r.identifier === merged.identifier)!
      out.push(lazyRecord({
        ...base,
        counts: merged.counts ?? base.counts,
        gcve: group.some((r) => r.gcve),
        enrichedAt: group.map((r) => r.enrichedAt).reduce(latest),
        fetchedAt: group.map((r) => r.fetchedAt).reduce(latest)
      }, merged.json))
    }
    i = end
  }
  return out
}

/**
 * Shared by both stores: records (sorted by source, identifier) with EPSS
 * merged, one per source when read with bodies (`perSource`), then a
 * processing placeholder per source that has only a raw item.
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
  const sorted = records.sort(byKey)
  const withBodies = sorted.filter((r) => r.body !== null)
  // Without bodies (`/info`) there is nothing to merge: every upstream record counts.
  const out: Array<SourceRecord> = [
    ...sorted.filter((r) => r.body === null).map((r) => lazyRecord(r, null)),
    ...perSource(query, withBodies, withBodies.map((r) => textWithEpss(r.body!, scores.get(r.identifier) ?? fallback)))
  ].sort(byKey)
  const covered = new Set(sorted.map((r) => `${r.source}\u0000${r.identifier}`))
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

/** Alias hops followed from the query: its own aliases, and theirs (a CVE reaches its GHSA and PYSEC ids). */
export const ALIAS_HOPS = 2

/**
 * Exploits are filed under CVE ids. A CVE query reads its own only (an alias
 * walk from a CVE can reach a different CVE, e.g. a rejected duplicate); any
 * other identifier reads the exploits of the CVEs it is an alias of.
 */
export const exploitKeys = (query: string, resolved: ReadonlyArray<string>): ReadonlyArray<string> =>
  isCve(query) ? [query] : resolved.filter(isCve)
