import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"

/**
 * What a run leaves in each table, without the wall-clock columns (fetched,
 * enriched, failed times), which differ between any two runs.
 */
const TABLES: ReadonlyArray<readonly [string, string]> = [
  ["vuln_raw", "source, identifier, content_hash, md5(content) AS content"],
  ["vuln_normalised", "source, identifier, content_hash"],
  [
    "vuln_records",
    "source, identifier, origin_source, origin_identifier, record, epss_splice, counts, gcve, known_exploited, rank"
  ],
  ["vuln_aliases", "identifier, alias, origin_source, origin_identifier"],
  ["vuln_epss", "cve, score, percentile, score_date, model_version, origin_source, origin_identifier"],
  [
    "vuln_exploits",
    "uuid, origin_source, origin_identifier, cve_id, source, summary_key, type, url, title, created_at, details"
  ],
  ["vuln_exploit_content", "uuid, origin_source, origin_identifier, md5(content) AS content"],
  ["vuln_failed", "source, identifier, content_hash, position, reason"]
]

/** Per table: row count and an md5 over all rows in a canonical order. */
export const digestDatabase = (url: string) =>
  Effect.scoped(Effect.gen(function*() {
    const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: 1 })
    const out: Record<string, string> = {}
    for (const [table, columns] of TABLES) {
      const [row] = yield* sql.unsafe<{ n: number; digest: string }>(
        `SELECT count(*)::int AS n, md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')) AS digest
         FROM (SELECT ${columns} FROM ${table}) t`
      )
      out[table] = `${row!.n}:${row!.digest}`
    }
    return out
  })).pipe(Effect.provide(Reactivity.layer), Effect.orDie)
