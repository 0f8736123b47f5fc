import { Effect, PubSub, Semaphore, Stream } from "effect"
import { SqlClient } from "effect/sql"
import type { SourceName } from "../../schema/Source.ts"
import { Invalidation } from "../db/Invalidation.ts"
import { type EpssEntry, isCve } from "./Epss.ts"
import { emptySummary, SUMMARY_KEYS, withContent } from "./ExploitSummary.ts"
import { assemble, exploitKeys, type FoundRecord, type ProcessingItem } from "./LookupAssembly.ts"
import type { ExploitRecord } from "./Normalised.ts"
import { aliasWalk, lookupStatement, parseSplice, recordsStatement } from "./SqlVulnReads.ts"
import { pendingRawSql, putNormalisedSql, putRawSql } from "./SqlVulnWrites.ts"
import { toRows } from "./StoreRows.ts"
import { publishTouched } from "./TouchedRecords.ts"
import type {
  FailedItem,
  LookupOptions,
  NormalisedItem,
  PageRequest,
  PendingCursor,
  RawItem,
  VulnStoreShape
} from "./VulnStoreShapes.ts"

interface ExploitRow {
  uuid: string
  origin_source: string
  origin_identifier: string
  cve_id: string
  source: string
  summary_key: (typeof SUMMARY_KEYS)[number]
  type: ExploitRecord["type"]
  url: string | null
  title: string | null
  created_at: number | null
  details: Record<string, Record<string, unknown>>
}

export const makeSqlVulnStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const changes = yield* PubSub.sliding<ReadonlyArray<string>>(1024)
  const bus = yield* Invalidation
  // After the commit, and before the write returns: an ingest acknowledges a batch only once
  // every process's response cache was told (NOTIFY sent) and this one's dropped the entries.
  const publish = (ids: ReadonlyArray<string>) =>
    ids.length === 0 ? Effect.void : Effect.andThen(publishTouched(bus, ids), PubSub.publish(changes, ids))

  const resolve = (identifier: string) =>
    sql<{ id: string }>`${aliasWalk(sql, identifier)} SELECT unnest(ids.ids) AS id FROM ids`.pipe(
      Effect.map((rows) => rows.map((r) => r.id))
    )

  const lookup = Effect.fnUntraced(function*(identifier: string, options?: LookupOptions) {
    const recordsOnly = options?.recordsOnly ?? false
    const rows = yield* (recordsOnly
      ? recordsStatement(sql, identifier)
      : lookupStatement(sql, identifier, options?.bodies ?? true))
    const ids: Array<string> = []
    const records: Array<FoundRecord> = []
    const processing: Array<ProcessingItem> = []
    const scores = new Map<string, EpssEntry>()
    for (const row of rows) {
      switch (row.kind) {
        case "id":
          ids.push(row.identifier)
          break
        case "record":
          records.push({
            source: row.source as SourceName,
            identifier: row.identifier,
            body: row.record === null ? null : { text: row.record, splice: parseSplice(row.splice) },
            counts: row.counts!,
            gcve: row.gcve!,
            enrichedAt: row.enriched_at!,
            fetchedAt: row.fetched_at!
          })
          break
        case "raw":
          processing.push({ source: row.source, identifier: row.identifier, fetchedAt: row.fetched_at! })
          break
        case "epss":
          scores.set(row.identifier, {
            cve: row.identifier,
            score: row.score!,
            percentile: row.percentile!,
            date: row.score_date!,
            modelVersion: row.model_version!
          })
      }
    }
    // Without identifier rows, the CVEs the query reaches that matter (for the EPSS fallback) are those with a score.
    if (recordsOnly) {
      return { aliases: [], records: assemble(identifier, [...scores.keys()], records, processing, scores).records }
    }
    return assemble(identifier, ids, records, processing, scores)
  }, Effect.orDie)

  const exploits = Effect.fn("VulnStore.exploits")(function*(identifier: string, page: PageRequest) {
    const ids = exploitKeys(identifier, isCve(identifier) ? [identifier] : yield* resolve(identifier))
    // One row per uuid; when several items produced it, the fullest wins.
    const collapsed = sql`
      SELECT DISTINCT ON (uuid) uuid, origin_source, origin_identifier, cve_id, source, summary_key, type, url, title,
        created_at::float8 AS created_at, details
      FROM vuln_exploits WHERE cve_id = ANY(${ids}::text[])
      ORDER BY uuid, length(details::text) DESC, origin_source, origin_identifier`
    const [counts, rows] = yield* Effect.all([
      sql<{ summary_key: string; n: number }>`
        SELECT summary_key, count(*)::int AS n FROM (${collapsed}) e GROUP BY summary_key`,
      sql<ExploitRow>`
        SELECT * FROM (${collapsed}) e ORDER BY created_at DESC NULLS LAST, uuid
        LIMIT ${page.limit} OFFSET ${page.offset}`
    ], { concurrency: "unbounded" })
    const summary = emptySummary()
    let count = 0
    for (const c of counts) {
      summary[c.summary_key as keyof typeof summary] += c.n
      count += c.n
    }
    const bodies = new Map<string, string>()
    if (page.includeContent && rows.length > 0) {
      // The body may sit under another item than the row that won the collapse (a nuclei
      // `cves.json` line and its template share a uuid): take it from whichever holds it.
      // Rows of one uuid share their CVE, so `vuln_exploits_cve` serves the look-up.
      const found = yield* sql<{ uuid: string; content: string }>`
        SELECT DISTINCT ON (e.uuid) e.uuid, c.content
        FROM vuln_exploits e
        JOIN vuln_exploit_content c
          ON c.origin_source = e.origin_source AND c.origin_identifier = e.origin_identifier AND c.uuid = e.uuid
        WHERE e.cve_id = ANY(${[...new Set(rows.map((r) => r.cve_id))]}::text[])
          AND e.uuid = ANY(${rows.map((r) => r.uuid)}::text[])
        ORDER BY e.uuid, e.origin_source, e.origin_identifier`
      for (const b of found) bodies.set(b.uuid, b.content)
    }
    return {
      count,
      summary,
      exploits: rows.map((r): ExploitRecord => {
        const body = bodies.get(r.uuid)
        return {
          uuid: r.uuid,
          cveId: r.cve_id,
          source: r.source,
          type: r.type,
          ...(r.url === null ? {} : { url: r.url }),
          ...(r.title === null ? {} : { title: r.title }),
          ...(r.created_at === null ? {} : { createdAt: r.created_at }),
          details: body === undefined ? r.details : withContent(r.details, r.summary_key, body)
        }
      })
    }
  }, Effect.orDie)

  // The process's ingestions (a sync runs its sources at once, each with batches in flight) share
  // these: phase-2 transactions take turns here before they take a connection (they would otherwise
  // each hold one while waiting for the advisory lock inside), and at most two raw transactions run
  // at once. The pool's other connections stay free for the API's readers.
  const phaseTwoTurn = yield* Semaphore.make(1)
  const rawTurns = yield* Semaphore.make(2)

  const putRaw = Effect.fn("VulnStore.putRaw")(function*(items: ReadonlyArray<RawItem>) {
    const results = yield* rawTurns.withPermits(1)(sql.withTransaction(putRawSql(sql, items)))
    yield* publish(items.filter((_, n) => results[n]!.outcome !== "unchanged").map((i) => i.identifier))
    return results
  }, Effect.orDie)

  const putNormalised = Effect.fn("VulnStore.putNormalised")(function*(
    done: ReadonlyArray<NormalisedItem>,
    failed: ReadonlyArray<FailedItem>
  ) {
    const rows = toRows(done)
    const { previously, stored } = yield* phaseTwoTurn.withPermits(1)(
      sql.withTransaction(putNormalisedSql(sql, done, failed, rows))
    )
    yield* publish([...rows.touched, ...previously, ...failed.map((f) => f.identifier)])
    return stored
  }, Effect.orDie)

  const failed = Effect.fn("VulnStore.failed")(function*() {
    const rows = yield* sql<
      { source: string; identifier: string; content_hash: string; position: string; reason: string; failed_at: Date }
    >`
      SELECT source, identifier, content_hash, position, reason, failed_at FROM vuln_failed ORDER BY source, identifier`
    return rows.map((r): FailedItem => ({
      source: r.source,
      identifier: r.identifier,
      hash: r.content_hash,
      position: r.position,
      reason: r.reason,
      failedAt: r.failed_at
    }))
  }, Effect.orDie)

  const pendingRaw = Effect.fn("VulnStore.pendingRaw")(function*(after: PendingCursor | undefined, limit: number) {
    return yield* pendingRawSql(sql, after, limit)
  }, Effect.orDie)

  // The embedded database (PGlite) runs on the server's own thread, so its ANALYZE stalls every request
  // of every service while it reads its samples: 1 to 1.5 s at the end of each ingest over 300,000 stored
  // items. A sample a tenth the size (3,000 rows a table) took 15-18 ms instead of 154-235 ms for a
  // 200,000-row table, and still tells the planner the tables are not empty, which is what the lookups
  // need. PostgreSQL analyses in its own process and keeps the default sample.
  const embedded = yield* Effect.cached(
    sql<{ readonly embedded: boolean }>`SELECT version() LIKE '%PGlite%' AS embedded`.pipe(
      Effect.map((rows) => rows[0]?.embedded === true)
    )
  )
  const refreshStatistics = Effect.fn("VulnStore.refreshStatistics")(function*() {
    const analyze =
      sql`ANALYZE vuln_raw, vuln_normalised, vuln_records, vuln_aliases, vuln_epss, vuln_exploits, vuln_failed`
    if (!(yield* embedded)) return yield* analyze
    yield* sql.withTransaction(Effect.andThen(sql`SET LOCAL default_statistics_target = 10`, analyze))
  }, Effect.orDie)

  return {
    lookup,
    exploits,
    touched: Stream.fromPubSub(changes),
    putRaw,
    putNormalised,
    failed,
    pendingRaw,
    refreshStatistics
  } satisfies VulnStoreShape
})
