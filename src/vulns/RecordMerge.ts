import type { RecordCounts } from "../../schema/Source.ts"
import { isOurs } from "./EnrichmentContainer.ts"
import { isCve } from "./Epss.ts"
import { asArray, distinct, isRecord } from "./JsonShapes.ts"
import { countRecord } from "./RecordCounts.ts"

/**
 * What `/vuln` makes of the records one source holds for a query
 * (docs/sources.md, "One record per source"):
 *
 * - Identity: queried by a CVE, a record filed under another database's id
 *   (GHSA, RUSTSEC, EUVD, ...) carries that CVE in `cveMetadata.cveId` and its
 *   native ids in `x_aliases`, so every record of a CVE answer validates against
 *   the CVE schema. Normalisation already stores most records that way; this
 *   covers an advisory naming several CVEs (answered with the one asked for)
 *   and one reached through another alias only.
 * - Merge: when the alias walk reaches several records of one source (two
 *   RUSTSEC advisories of one CVE, a GHSA and its duplicate), they become that
 *   source's one record: the base record (filed under the query, else carrying
 *   it as `cveId`, else the first by identifier; a PUBLISHED one over a
 *   REJECTED one) with `affected`, `references` and `problemTypes` unioned
 *   without duplicates, and every identifier of every part in `x_aliases`.
 *
 * Both are the rare path: a lookup that needs neither passes the stored text
 * through untouched (`needsRewrite` is a prefix test on that text).
 */

export interface Part {
  readonly identifier: string
  /** The stored text with EPSS merged. */
  readonly json: string
}

export interface Merged {
  readonly identifier: string
  readonly json: string
  /** Recounted when several records were merged (a changed `cveId` or `x_aliases` changes no count). */
  readonly counts?: RecordCounts
}

type Json = Record<string, unknown>

/** How `buildRecord` (src/ingest/formats/cve5.ts) serialises the start of every record it builds. */
const PREFIX = `{"dataType":"CVE_RECORD","dataVersion":"5.1","cveMetadata":{"cveId":`

/**
 * Whether a single record may need its `cveId` changed for this query: only a
 * record filed under a non-CVE id, queried by a CVE it does not already carry.
 */
export const needsRewrite = (query: string, part: Part): boolean =>
  isCve(query) && !isCve(part.identifier) && !part.json.startsWith(`${PREFIX}${JSON.stringify(query)},`)

const metadataOf = (record: Json): Json => isRecord(record.cveMetadata) ? record.cveMetadata : {}
const containersOf = (record: Json): Json => isRecord(record.containers) ? record.containers : {}
const cveIdOf = (record: Json): string => String(metadataOf(record).cveId ?? "")
const oursOf = (record: Json): Json | undefined => asArray(containersOf(record).adp).find(isOurs)
const aliasesOf = (record: Json): Array<string> => asArray(oursOf(record)?.x_aliases).map(String)

/** The record with `f` applied to this service's enrichment container. */
const withOurs = (record: Json, f: (c: Json) => Json): Json => {
  const containers = containersOf(record)
  return { ...record, containers: { ...containers, adp: asArray(containers.adp).map((c) => isOurs(c) ? f(c) : c) } }
}

/** Every identifier a record is known by. */
const namesOf = (identifier: string, record: Json): Array<string> => [identifier, cveIdOf(record), ...aliasesOf(record)]

/** A record of a non-CVE id answering CVE `query`: `cveId` becomes the query when the record aliases it or carries no CVE. */
const asAnswerTo = (query: string, identifier: string, record: Json): Json => {
  const cveId = cveIdOf(record)
  if (!isCve(query) || isCve(identifier) || cveId === query || oursOf(record) === undefined) return record
  if (isCve(cveId) && !aliasesOf(record).includes(query)) return record
  return withOurs(
    { ...record, cveMetadata: { ...metadataOf(record), cveId: query } },
    (c) => ({ ...c, x_aliases: distinct([...aliasesOf(record), cveId, identifier]).filter((a) => a !== query) })
  )
}

const uniqueBy = <A>(items: ReadonlyArray<A>, key: (a: A) => string): Array<A> => {
  const seen = new Set<string>()
  return items.filter((a) => {
    const k = key(a)
    return seen.has(k) ? false : (seen.add(k), true)
  })
}

const isPlaceholder = (p: unknown) =>
  isRecord(p) && p.vendor === "n/a" && p.product === "n/a" && p.versions === undefined

/** References by URL, tags merged, within the schema's 512. */
const unionReferences = (lists: ReadonlyArray<ReadonlyArray<unknown>>): Array<Json> => {
  const byUrl = new Map<string, Json>()
  for (const r of lists.flat()) {
    if (!isRecord(r) || typeof r.url !== "string") continue
    const seen = byUrl.get(r.url)
    if (seen === undefined) byUrl.set(r.url, r)
    else {
      const tags = distinct([...asArray(seen.tags), ...asArray(r.tags)].map(String))
      byUrl.set(r.url, { ...seen, ...(tags.length > 0 ? { tags } : {}) })
    }
  }
  return [...byUrl.values()].slice(0, 512)
}

const cnaOf = (record: Json): Json => {
  const cna = containersOf(record).cna
  return isRecord(cna) ? cna : {}
}

const mergeInto = (base: Json, parts: ReadonlyArray<{ identifier: string; record: Json }>): Json => {
  const published = parts.filter((p) => metadataOf(p.record).state !== "REJECTED")
  const cnas = published.map((p) => cnaOf(p.record))
  const affected = uniqueBy(cnas.flatMap((c) => asArray(c.affected)), (a) => JSON.stringify(a))
  const real = affected.filter((a) => !isPlaceholder(a))
  const problemTypes = uniqueBy(cnas.flatMap((c) => asArray(c.problemTypes)), (p) => JSON.stringify(p))
  const cna = cnaOf(base)
  const cveId = cveIdOf(base)
  const merged: Json = {
    ...base,
    containers: {
      ...containersOf(base),
      cna: {
        ...cna,
        affected: real.length > 0 ? real : affected.slice(0, 1),
        references: unionReferences(cnas.map((c) => asArray(c.references))),
        ...(problemTypes.length > 0 ? { problemTypes } : {})
      }
    }
  }
  const collected = parts.flatMap((p) => asArray(oursOf(p.record)?.x_dataCollected).map(String))
  const names = parts.flatMap((p) => namesOf(p.identifier, p.record))
  return withOurs(merged, (c) => ({
    ...c,
    x_dataCollected: distinct(collected),
    x_aliases: distinct(names).filter((a) => a !== cveId && a !== "")
  }))
}

/**
 * One source's answer to `query` from the records the walk reached (sorted by
 * identifier): the stored text itself when one record needs no change.
 */
export const mergeSource = (query: string, parts: ReadonlyArray<Part>): Merged => {
  if (parts.length === 1 && !needsRewrite(query, parts[0]!)) return parts[0]!
  const parsed = parts.map((p) => {
    const stored = JSON.parse(p.json) as Json
    const record = asAnswerTo(query, p.identifier, stored)
    return { identifier: p.identifier, json: p.json, record, changed: record !== stored }
  })
  const published = parsed.filter((p) => metadataOf(p.record).state !== "REJECTED")
  const candidates = published.length > 0 ? published : parsed
  const base = candidates.find((p) => p.identifier === query) ??
    candidates.find((p) => cveIdOf(p.record) === query) ??
    candidates[0]!
  // A REJECTED record has only its CNA container (the schema allows nothing else): nothing to merge into.
  if (parts.length === 1 || oursOf(base.record) === undefined) {
    // Only `cveId` and `x_aliases` may have changed: the counts stay the stored ones.
    return { identifier: base.identifier, json: base.changed ? JSON.stringify(base.record) : base.json }
  }
  const merged = mergeInto(base.record, parsed)
  return { identifier: base.identifier, json: JSON.stringify(merged), counts: countRecord(merged) }
}
