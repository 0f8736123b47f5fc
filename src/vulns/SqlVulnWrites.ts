import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { chunksByChars } from "../db/StatementChunks.ts"
import { type Rows, toRows } from "./StoreRows.ts"
import type { FailedItem, NormalisedItem, RawItem, RawKey, RawResult } from "./VulnStoreShapes.ts"

/**
 * Multi-row writes for the vulnerability store. Each batch goes in as one
 * statement per table with `unnest` over array parameters: a handful of round
 * trips per thousand items, whatever the batch size.
 */

/** An all-null array cannot be typed by the driver; an empty one is padded with NULLs by multi-argument `unnest`. */
const nullable = <A>(values: ReadonlyArray<A | null>): ReadonlyArray<A | null> =>
  values.every((v) => v === null) ? [] : values

const distinct = (values: ReadonlyArray<string>) => [...new Set(values)]

/**
 * Key conditions for a batch of (source, identifier) pairs. A join against
 * `unnest` alone is estimated at 100 rows and planned as a hash join over a
 * sequential scan of the whole table; the `= ANY` pair lets the planner use
 * the (source, identifier) index, and the join keeps the pairs exact.
 */
const byKeys = (
  sql: SqlClient.SqlClient,
  table: string,
  sourceColumn: string,
  identifierColumn: string,
  keys: ReadonlyArray<{ readonly source: string; readonly identifier: string }>
) =>
  sql`${sql(table)}.${sql(sourceColumn)} = ANY(${distinct(keys.map((k) => k.source))}::text[])
    AND ${sql(table)}.${sql(identifierColumn)} = ANY(${distinct(keys.map((k) => k.identifier))}::text[])
    AND (${sql(table)}.${sql(sourceColumn)}, ${sql(table)}.${sql(identifierColumn)}) IN
      (SELECT * FROM unnest(${keys.map((k) => k.source)}::text[], ${keys.map((k) => k.identifier)}::text[]))`

/*
 * Every write commits synchronously: a batch is acknowledged to the CLI
 * (progress, summary) only once its commit is durable. An asynchronous commit
 * (`synchronous_commit = off`) was faster on PostgreSQL, but PGlite has no WAL
 * writer process, so its unflushed commits stayed in memory indefinitely and an
 * acknowledged ingestion vanished when the server was killed (issue 8).
 */

/**
 * Phase-2 transactions of concurrent writers (an ingestion and the start-up
 * resume, or two ingestions) share output keys and would deadlock on them, so
 * they take turns; held until commit. One ingestion's own phase-2 transactions
 * already run one at a time, so this costs it nothing.
 */
const PHASE_TWO_LOCK = 0x76646232 // "vdb2"
const phaseTwoTurn = (sql: SqlClient.SqlClient) => sql`SELECT pg_advisory_xact_lock(${PHASE_TWO_LOCK})`

export const putRawSql = (sql: SqlClient.SqlClient, items: ReadonlyArray<RawItem>) =>
  Effect.gen(function*() {
    if (items.length === 0) return [] as ReadonlyArray<RawResult>
    const existing = yield* sql<
      { source: string; identifier: string; content_hash: string; normalised_hash: string | null }
    >`
      SELECT vuln_raw.source, vuln_raw.identifier, vuln_raw.content_hash, n.content_hash AS normalised_hash
      FROM vuln_raw LEFT JOIN vuln_normalised n ON n.source = vuln_raw.source AND n.identifier = vuln_raw.identifier
      WHERE ${byKeys(sql, "vuln_raw", "source", "identifier", items)}`
    const known = new Map(existing.map((row) => [rawKeyOf(row), row]))
    const results: Array<RawResult> = []
    const changed: Array<RawItem> = []
    for (const item of items) {
      const row = known.get(rawKeyOf(item))
      if (row === undefined) {
        results.push({ outcome: "inserted", pending: true })
        changed.push(item)
      } else if (row.content_hash !== item.hash) {
        results.push({ outcome: "updated", pending: true })
        changed.push(item)
      } else {
        results.push({ outcome: "unchanged", pending: row.normalised_hash !== item.hash })
      }
    }
    // In statements of bounded size (StatementChunks.ts): one of a whole batch's text held the event loop.
    for (const chunk of chunksByChars(changed, (i) => i.content.length)) {
      yield* sql`
        INSERT INTO vuln_raw (source, identifier, content, content_hash, fetched_at)
        SELECT s, i, c, h, now()
        FROM unnest(${chunk.map((i) => i.source)}::text[], ${chunk.map((i) => i.identifier)}::text[],
          ${chunk.map((i) => i.content)}::text[], ${chunk.map((i) => i.hash)}::text[]) AS t(s, i, c, h)
        ON CONFLICT (source, identifier) DO UPDATE SET content = excluded.content,
          content_hash = excluded.content_hash, fetched_at = excluded.fetched_at`
    }
    return results
  })

/**
 * Each output table, and the columns naming what its rows were about (for the response caches):
 * an alias pair is one row (migration 0560), about both of its identifiers.
 */
const OUTPUT_TABLES: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
  ["vuln_records", ["identifier"]],
  ["vuln_aliases", ["identifier", "alias"]],
  ["vuln_epss", ["cve"]],
  ["vuln_exploits", ["cve_id"]],
  ["vuln_exploit_content", []],
  ["vuln_osv", ["identifier"]],
  ["vuln_packages", ["package_key"]]
]

export const putNormalisedSql = (
  sql: SqlClient.SqlClient,
  normalised: ReadonlyArray<NormalisedItem>,
  failures: ReadonlyArray<FailedItem>,
  batchRows: Rows
) =>
  Effect.gen(function*() {
    yield* phaseTwoTurn(sql)
    // Taken in turn, but not in the order their raw items were stored: two ingestions of one item
    // with different content (two processes, say) each normalise their own version, and the one
    // whose raw item was overwritten may come second. Its output would replace the current
    // version's and be served as current, with the item left pending. Skipped instead: the raw
    // item's current version is the other writer's to normalise (or pending, for the resume).
    let done = normalised
    let failed = failures
    let rows = batchRows
    const superseded = yield* supersededSql(sql, [...normalised, ...failures])
    if (superseded.size > 0) {
      const current = (item: RawKey) => !superseded.has(rawKeyOf(item))
      done = normalised.filter(current)
      failed = failures.filter(current)
      rows = toRows(done)
    }
    // Earlier output of re-normalised items is replaced, not merged: an item
    // that no longer names an alias or exploit must stop contributing it.
    // What the replaced output was about is touched too (an alias an item no longer names, say).
    const replaced = [...done.filter((d) => d.fresh !== true), ...failed]
    const previously = new Set<string>()
    if (replaced.length > 0) {
      for (const [table, about] of OUTPUT_TABLES) {
        const where = byKeys(sql, table, "origin_source", "origin_identifier", replaced)
        if (about.length === 0) {
          yield* sql`DELETE FROM ${sql(table)} WHERE ${where}`
          continue
        }
        const gone = yield* sql<Record<string, string>>`DELETE FROM ${sql(table)} WHERE ${where} RETURNING ${
          sql.csv(about.map((column) => sql`${sql(column)}`))
        }`
        for (const row of gone) for (const column of about) previously.add(row[column]!)
      }
    }
    const { aliases, epss, exploits, records } = rows
    for (const chunk of chunksByChars(records, (r) => r.body.text.length)) {
      yield* sql`
        INSERT INTO vuln_records (source, identifier, origin_source, origin_identifier, record, epss_splice, counts, gcve,
          known_exploited, rank, enriched_at)
        SELECT s, i, os, oi, r, sp::int[], c::json, g, k::json, rk, now()
        FROM unnest(${chunk.map((r) => r.source)}::text[], ${chunk.map((r) => r.identifier)}::text[],
          ${chunk.map((r) => r.origin.source)}::text[], ${chunk.map((r) => r.origin.identifier)}::text[],
          ${chunk.map((r) => r.body.text)}::text[],
          ${nullable(chunk.map((r) => r.body.splice === null ? null : `{${r.body.splice.join(",")}}`))}::text[],
          ${chunk.map((r) => JSON.stringify(r.counts))}::text[],
          ${chunk.map((r) => r.gcve)}::bool[],
          ${nullable(chunk.map((r) => r.knownExploited === null ? null : JSON.stringify(r.knownExploited)))}::text[],
          ${chunk.map((r) => r.rank)}::text[]) AS t(s, i, os, oi, r, sp, c, g, k, rk)
        ON CONFLICT (origin_source, origin_identifier, source, identifier) DO UPDATE SET record = excluded.record,
          epss_splice = excluded.epss_splice, counts = excluded.counts, gcve = excluded.gcve, known_exploited = excluded.known_exploited,
          rank = excluded.rank, enriched_at = excluded.enriched_at`
    }
    yield* putOsvSql(sql, records)
    if (aliases.length > 0) {
      yield* sql`
        INSERT INTO vuln_aliases (identifier, alias, origin_source, origin_identifier)
        SELECT * FROM unnest(${aliases.map((a) => a.identifier)}::text[], ${aliases.map((a) => a.alias)}::text[],
          ${aliases.map((a) => a.origin.source)}::text[], ${aliases.map((a) => a.origin.identifier)}::text[])
        ON CONFLICT DO NOTHING`
    }
    if (epss.length > 0) {
      yield* sql`
        INSERT INTO vuln_epss (cve, score, percentile, score_date, model_version, origin_source, origin_identifier)
        SELECT cve, s::float8, p::float8, d, m, os, oi
        FROM unnest(${epss.map((e) => e.cve)}::text[], ${epss.map((e) => String(e.score))}::text[],
          ${epss.map((e) => String(e.percentile))}::text[], ${epss.map((e) => e.date)}::text[],
          ${epss.map((e) => e.modelVersion)}::text[], ${epss.map((e) => e.origin.source)}::text[],
          ${epss.map((e) => e.origin.identifier)}::text[]) AS t(cve, s, p, d, m, os, oi)
        ON CONFLICT (cve) DO UPDATE SET score = excluded.score, percentile = excluded.percentile,
          score_date = excluded.score_date, model_version = excluded.model_version,
          origin_source = excluded.origin_source, origin_identifier = excluded.origin_identifier`
    }
    if (exploits.length > 0) {
      yield* sql`
        INSERT INTO vuln_exploits (uuid, origin_source, origin_identifier, cve_id, source, summary_key, type, url,
          title, created_at, details)
        SELECT u, os, oi, cve, s, k, ty, url, ti, ca::bigint, d::json
        FROM unnest(${exploits.map((e) => e.uuid)}::text[], ${exploits.map((e) => e.origin.source)}::text[],
          ${exploits.map((e) => e.origin.identifier)}::text[], ${exploits.map((e) => e.cveId)}::text[],
          ${exploits.map((e) => e.source)}::text[], ${exploits.map((e) => e.summaryKey)}::text[],
          ${exploits.map((e) => e.type)}::text[], ${nullable(exploits.map((e) => e.url))}::text[],
          ${nullable(exploits.map((e) => e.title))}::text[],
          ${nullable(exploits.map((e) => e.createdAt === null ? null : String(Math.trunc(e.createdAt))))}::text[],
          ${exploits.map((e) => JSON.stringify(e.details))}::text[]) AS t(u, os, oi, cve, s, k, ty, url, ti, ca, d)
        ON CONFLICT (origin_source, origin_identifier, uuid) DO UPDATE SET cve_id = excluded.cve_id,
          source = excluded.source, summary_key = excluded.summary_key, type = excluded.type, url = excluded.url,
          title = excluded.title, created_at = excluded.created_at, details = excluded.details`
      const bodies = exploits.filter((e) => e.content !== undefined)
      for (const chunk of chunksByChars(bodies, (e) => e.content!.length)) {
        yield* sql`
          INSERT INTO vuln_exploit_content (uuid, origin_source, origin_identifier, content)
          SELECT * FROM unnest(${chunk.map((e) => e.uuid)}::text[], ${chunk.map((e) => e.origin.source)}::text[],
            ${chunk.map((e) => e.origin.identifier)}::text[], ${chunk.map((e) => e.content!)}::text[])
          ON CONFLICT (origin_source, origin_identifier, uuid) DO UPDATE SET content = excluded.content`
      }
    }
    if (failed.length > 0) {
      yield* sql`
        INSERT INTO vuln_failed (source, identifier, content_hash, position, reason, failed_at)
        SELECT s, i, h, p, r, now()
        FROM unnest(${failed.map((f) => f.source)}::text[], ${failed.map((f) => f.identifier)}::text[],
          ${failed.map((f) => f.hash)}::text[], ${failed.map((f) => f.position)}::text[],
          ${failed.map((f) => f.reason)}::text[]) AS t(s, i, h, p, r)
        ON CONFLICT (source, identifier) DO UPDATE SET content_hash = excluded.content_hash,
          position = excluded.position, reason = excluded.reason, failed_at = excluded.failed_at`
    }
    if (done.length > 0) {
      const retried = done.filter((d) => d.fresh !== true)
      if (retried.length > 0) {
        yield* sql`DELETE FROM vuln_failed WHERE ${byKeys(sql, "vuln_failed", "source", "identifier", retried)}`
      }
      // The hash phase 2 actually worked from: a newer fetch that raced this
      // batch differs from it and so stays pending.
      yield* sql`INSERT INTO vuln_normalised (source, identifier, content_hash)
        SELECT * FROM unnest(${done.map((d) => d.source)}::text[], ${done.map((d) => d.identifier)}::text[],
          ${done.map((d) => d.hash)}::text[])
        ON CONFLICT (source, identifier) DO UPDATE SET content_hash = excluded.content_hash`
    }
    return { previously, stored: done.length }
  })

/** The records' OSV forms and package index rows (migration 0620); their old rows went with the records'. */
const putOsvSql = (sql: SqlClient.SqlClient, records: Rows["records"]) =>
  Effect.gen(function*() {
    const osv = records.filter((r) => r.osv !== undefined)
    for (const chunk of chunksByChars(osv, (r) => r.osv!.text.length)) {
      yield* sql`
      INSERT INTO vuln_osv (source, identifier, origin_source, origin_identifier, modified, osv)
      SELECT * FROM unnest(${chunk.map((r) => r.source)}::text[], ${chunk.map((r) => r.identifier)}::text[],
        ${chunk.map((r) => r.origin.source)}::text[], ${chunk.map((r) => r.origin.identifier)}::text[],
        ${chunk.map((r) => r.osv!.modified)}::text[], ${chunk.map((r) => r.osv!.text)}::text[])
      ON CONFLICT (origin_source, origin_identifier, source, identifier) DO UPDATE SET modified = excluded.modified,
        osv = excluded.osv, changed = nextval('vuln_osv_changes')`
    }
    const packages = osv.flatMap((r) =>
      r.osv!.packages.map((p) => ({
        record: r,
        p,
        affected: JSON.stringify({ ecosystem: p.ecosystem, ranges: p.ranges, versions: p.versions })
      }))
    )
    for (const chunk of chunksByChars(packages, (row) => row.affected.length)) {
      yield* sql`
      INSERT INTO vuln_packages (ecosystem, name, source, identifier, origin_source, origin_identifier, package_key, affected)
      SELECT * FROM unnest(${chunk.map(({ p }) => p.base)}::text[], ${chunk.map(({ p }) => p.name)}::text[],
        ${chunk.map(({ record }) => record.source)}::text[], ${chunk.map(({ record }) => record.identifier)}::text[],
        ${chunk.map(({ record }) => record.origin.source)}::text[], ${
        chunk.map(({ record }) => record.origin.identifier)
      }::text[],
        ${chunk.map(({ p }) => p.key)}::text[],
        ${chunk.map(({ affected }) => affected)}::text[])`
    }
  })

const rawKeyOf = (item: { readonly source: string; readonly identifier: string }) =>
  `${item.source}\u0000${item.identifier}`

/** The items whose stored raw content is no longer the version they were normalised from. */
const supersededSql = (sql: SqlClient.SqlClient, items: ReadonlyArray<RawKey>) =>
  items.length === 0
    ? Effect.succeed(new Set<string>())
    : Effect.map(
      sql<{ source: string; identifier: string }>`
        SELECT r.source, r.identifier
        FROM unnest(${items.map((i) => i.source)}::text[], ${items.map((i) => i.identifier)}::text[],
          ${items.map((i) => i.hash)}::text[]) AS t(s, i, h)
        JOIN vuln_raw r ON r.source = t.s AND r.identifier = t.i
        WHERE r.content_hash <> t.h`,
      (stale) => new Set(stale.map(rawKeyOf))
    )

/**
 * Raw items whose current content phase 2 has neither completed nor failed on
 * (a run stopped between its two transactions), in key order after `after`.
 * Keyset pages: an item that stays pending (changed again meanwhile) is not
 * read twice by one pass.
 */
export const pendingRawSql = (
  sql: SqlClient.SqlClient,
  after: { readonly source: string; readonly identifier: string } | undefined,
  limit: number
) =>
  sql<{ source: string; identifier: string; content: string; content_hash: string }>`
    SELECT r.source, r.identifier, r.content, r.content_hash
    FROM vuln_raw r
    LEFT JOIN vuln_normalised n ON n.source = r.source AND n.identifier = r.identifier
    LEFT JOIN vuln_failed f ON f.source = r.source AND f.identifier = r.identifier
    WHERE n.content_hash IS DISTINCT FROM r.content_hash AND f.content_hash IS DISTINCT FROM r.content_hash
      ${after === undefined ? sql`` : sql`AND (r.source, r.identifier) > (${after.source}, ${after.identifier})`}
    ORDER BY r.source, r.identifier
    LIMIT ${limit}`.pipe(
    Effect.map((rows) =>
      rows.map((r): RawItem => ({
        source: r.source,
        identifier: r.identifier,
        content: r.content,
        hash: r.content_hash
      }))
    )
  )
