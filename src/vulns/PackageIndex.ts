import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { AffectedEntry } from "./AffectedVersion.ts"

/** One `affected` entry of a record, as the package index keeps it. */
export interface IndexedEntry extends AffectedEntry {
  /** As the record wrote it, release included (`Debian:12`). */
  readonly ecosystem: string
}

/** A record that names the package, in the OSV schema, with its entries for that package. */
export interface PackageRecord {
  readonly id: string
  readonly modified: string
  /** The OSV record's JSON text, served as is. */
  readonly osv: string
  readonly entries: ReadonlyArray<IndexedEntry>
}

export interface Change {
  readonly id: string
  readonly modified: string
  readonly cursor: string
}

/**
 * Several sources may publish one identifier (a GHSA record from both the GHSA
 * and the OSV upstream; a CVE from mitre and vulnrichment): the newest
 * `modified` is served, OSV's own copy first on a tie.
 */
const SOURCE_PREFERENCE = ["osv", "ghsa", "mitre", "euvd", "nist-nvd", "vulncheck-nvd", "cisa-kev", "vulncheck-kev"]
const preference = (source: string) => {
  const n = SOURCE_PREFERENCE.indexOf(source)
  return n < 0 ? SOURCE_PREFERENCE.length : n
}
const newer = (a: { modified: string; source: string }, b: { modified: string; source: string }) =>
  a.modified !== b.modified ? a.modified > b.modified : preference(a.source) < preference(b.source)

/**
 * Reads of the package index and the OSV forms (migration 0620), which the
 * normalise step writes (`SqlVulnWrites.ts`). A package query reads only that
 * package's index rows and the records they name.
 */
export class PackageIndex extends Context.Service<PackageIndex, {
  /** Every record naming the package (`base` ecosystem, normalised name), one per identifier, by identifier. */
  records(base: string, name: string): Effect.Effect<ReadonlyArray<PackageRecord>>
  /** The OSV form of an identifier (exact, as stored), if any source has one. */
  record(identifier: string): Effect.Effect<string | undefined>
  /** Identifiers whose OSV form was written after `cursor`, oldest write first, at most `limit`. */
  changes(cursor: bigint, limit: number): Effect.Effect<ReadonlyArray<Change>>
}>()("vdb/vulns/PackageIndex") {
  static readonly layer = Layer.effect(PackageIndex, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const records = Effect.fn("PackageIndex.records")(function*(base: string, name: string) {
      const rows = yield* sql<{ identifier: string; source: string; origin_source: string; origin_identifier: string; affected: string; modified: string; osv: string }>`
        SELECT p.identifier, p.source, p.origin_source, p.origin_identifier, p.affected, o.modified, o.osv
        FROM vuln_packages p
        JOIN vuln_osv o ON o.origin_source = p.origin_source AND o.origin_identifier = p.origin_identifier
          AND o.source = p.source AND o.identifier = p.identifier
        WHERE p.ecosystem = ${base} AND p.name = ${name}`.pipe(Effect.orDie)
      // Per identifier, the newest record (by origin), with all of that record's entries for the package.
      const best = new Map<string, { modified: string; source: string; origin: string; osv: string; entries: Array<IndexedEntry> }>()
      for (const row of rows) {
        const origin = `${row.origin_source}\u0000${row.origin_identifier}\u0000${row.source}`
        const entry = JSON.parse(row.affected) as IndexedEntry
        const current = best.get(row.identifier)
        if (current !== undefined && current.origin === origin) {
          current.entries.push(entry)
          continue
        }
        const candidate = { modified: row.modified, source: row.source, origin, osv: row.osv, entries: [entry] }
        if (current === undefined || newer(candidate, current)) best.set(row.identifier, candidate)
      }
      return [...best.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([id, r]): PackageRecord => ({ id, modified: r.modified, osv: r.osv, entries: r.entries }))
    })

    const record = Effect.fn("PackageIndex.record")(function*(identifier: string) {
      const rows = yield* sql<{ source: string; modified: string; osv: string }>`
        SELECT source, modified, osv FROM vuln_osv WHERE identifier = ${identifier}`.pipe(Effect.orDie)
      let best: (typeof rows)[number] | undefined
      for (const row of rows) if (best === undefined || newer(row, best)) best = row
      return best?.osv
    })

    const changes = Effect.fn("PackageIndex.changes")(function*(cursor: bigint, limit: number) {
      // Ordered by the bigint column, not its text (under another name, or "10" would sort before "9").
      const rows = yield* sql<{ identifier: string; modified: string; position: string }>`
        SELECT identifier, modified, changed::text AS position FROM vuln_osv
        WHERE changed > ${cursor.toString()}::bigint ORDER BY vuln_osv.changed LIMIT ${limit}`.pipe(Effect.orDie)
      return rows.map((r): Change => ({ id: r.identifier, modified: r.modified, cursor: r.position }))
    })

    return PackageIndex.of({ records, record, changes })
  }))
}
