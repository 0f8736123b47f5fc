import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export interface KevEntry {
  readonly cve: string
  readonly dateAdded: string
  readonly knownRansomwareCampaignUse: string | null
}

/**
 * Known-exploited entries, newest first, one per CVE across the KEV sources
 * (the store keeps each record's `known_exploited` summary; VulnStore has no
 * listing of it, and this read needs nothing else from the store).
 */
export const recentKev = (options: { readonly since: string | null; readonly offset: number; readonly size: number }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const since = options.since === null ? sql`TRUE` : sql`(known_exploited->>'dateAdded') >= ${options.since}`
    // The total is counted apart from the page, so a page past the end still reports it;
    // the lateral join keeps that one row when the page is empty (`present` is then null).
    const rows = yield* sql<
      { present: boolean | null; cve: string; date_added: string; ransomware: string | null; total: number }
    >`
      WITH k AS (
        SELECT known_exploited->>'cve' AS cve, max(known_exploited->>'dateAdded') AS date_added,
               max(known_exploited->>'knownRansomwareCampaignUse') AS ransomware
        FROM vuln_records WHERE known_exploited IS NOT NULL AND ${since}
        GROUP BY known_exploited->>'cve'
      )
      SELECT p.present, p.cve, p.date_added, p.ransomware, t.total
      FROM (SELECT count(*)::int AS total FROM k) t
      LEFT JOIN LATERAL (SELECT k.*, TRUE AS present FROM k ORDER BY date_added DESC, cve DESC LIMIT ${options.size} OFFSET ${options.offset}) p ON TRUE
      ORDER BY p.date_added DESC, p.cve DESC`
    const entries: ReadonlyArray<KevEntry> = rows.flatMap((r) =>
      r.present === null ? [] : [{ cve: r.cve, dateAdded: r.date_added, knownRansomwareCampaignUse: r.ransomware }]
    )
    return { entries, total: rows[0]?.total ?? 0 }
  })
