import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { AffectedEntry } from "./AffectedVersion.ts"

/** One `affected` entry of a record, as the package index keeps it. */
export interface IndexedEntry extends AffectedEntry {
  /** As the record wrote it, release included (`Debian:12`). */
  readonly ecosystem: string
}

/** Where a record's OSV text is kept (`vuln_osv`'s key). */
export interface OsvKey {
  readonly source: string
  readonly identifier: string
  readonly originSource: string
  readonly originIdentifier: string
}

/** A record that names the package, with its entries for that package; its OSV text stays in the database. */
export interface PackageRecord {
  readonly id: string
  readonly modified: string
  /** `{"id":…,"modified":…}`: the record as a querybatch result lists it, rendered once. */
  readonly brief: string
  readonly key: OsvKey
  readonly entries: ReadonlyArray<IndexedEntry>
}

/** A package as the index keys it: OSV base ecosystem and normalised name. */
export interface PackageName {
  readonly base: string
  readonly name: string
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

interface Best {
  readonly modified: string
  readonly source: string
  readonly key: OsvKey
  readonly entries: Array<IndexedEntry>
}

/**
 * Reads of the package index and the OSV forms (migration 0620), which the
 * normalise step writes (`SqlVulnWrites.ts`). A package query reads only that
 * package's index rows and the records they name.
 */
export class PackageIndex extends Context.Service<PackageIndex, {
  /**
   * Every record naming each package, one per identifier, by identifier: one
   * SQL statement for all of them, reading the index rows and each record's
   * `modified`, never its text.
   */
  packages(names: ReadonlyArray<PackageName>): Effect.Effect<ReadonlyArray<ReadonlyArray<PackageRecord>>>
  /** The OSV texts of `keys`, in their order (one statement); an empty string for a row gone meanwhile. */
  texts(keys: ReadonlyArray<OsvKey>): Effect.Effect<ReadonlyArray<string>>
  /** The OSV form of an identifier (exact, as stored), if any source has one. */
  record(identifier: string): Effect.Effect<string | undefined>
  /** Identifiers whose OSV form was written after `cursor`, oldest write first, at most `limit`. */
  changes(cursor: bigint, limit: number): Effect.Effect<ReadonlyArray<Change>>
}>()("vdb/vulns/PackageIndex") {
  static readonly layer = Layer.effect(
    PackageIndex,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient

      const packages = Effect.fn("PackageIndex.packages")(function*(names: ReadonlyArray<PackageName>) {
        if (names.length === 0) return []
        // The arrays' elements in "C", as the index columns are: the (ecosystem, name) index serves the join.
        const rows = yield* sql<
          {
            n: number
            identifier: string
            source: string
            origin_source: string
            origin_identifier: string
            affected: string
            modified: string
          }
        >`
        SELECT q.n::int AS n, p.identifier, p.source, p.origin_source, p.origin_identifier, p.affected, o.modified
        FROM unnest(${names.map((p) => p.base)}::text[], ${
          names.map((p) => p.name)
        }::text[]) WITH ORDINALITY AS q(ecosystem, name, n)
        JOIN vuln_packages p ON p.ecosystem = q.ecosystem COLLATE "C" AND p.name = q.name COLLATE "C"
        JOIN vuln_osv o ON o.origin_source = p.origin_source AND o.origin_identifier = p.origin_identifier
          AND o.source = p.source AND o.identifier = p.identifier`.pipe(Effect.orDie)
        // Per package and identifier, the newest record (by origin), with all of that record's entries for the package.
        const best = names.map(() => new Map<string, Best>())
        for (const row of rows) {
          const byId = best[row.n - 1]!
          const current = byId.get(row.identifier)
          const entry = JSON.parse(row.affected) as IndexedEntry
          if (
            current !== undefined && current.key.source === row.source &&
            current.key.originSource === row.origin_source &&
            current.key.originIdentifier === row.origin_identifier
          ) {
            current.entries.push(entry)
            continue
          }
          const candidate: Best = {
            modified: row.modified,
            source: row.source,
            key: {
              source: row.source,
              identifier: row.identifier,
              originSource: row.origin_source,
              originIdentifier: row.origin_identifier
            },
            entries: [entry]
          }
          if (current === undefined || newer(candidate, current)) byId.set(row.identifier, candidate)
        }
        return best.map((byId) =>
          [...byId.entries()]
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
            .map(([id, r]): PackageRecord => ({
              id,
              modified: r.modified,
              brief: `{"id":${JSON.stringify(id)},"modified":${JSON.stringify(r.modified)}}`,
              key: r.key,
              entries: r.entries
            }))
        )
      })

      const texts = Effect.fn("PackageIndex.texts")(function*(keys: ReadonlyArray<OsvKey>) {
        if (keys.length === 0) return []
        const rows = yield* sql<{ n: number; osv: string }>`
        SELECT q.n::int AS n, o.osv
        FROM unnest(${keys.map((k) => k.originSource)}::text[], ${keys.map((k) => k.originIdentifier)}::text[],
          ${keys.map((k) => k.source)}::text[], ${keys.map((k) => k.identifier)}::text[])
          WITH ORDINALITY AS q(origin_source, origin_identifier, source, identifier, n)
        JOIN vuln_osv o ON o.origin_source = q.origin_source COLLATE "C" AND o.origin_identifier = q.origin_identifier COLLATE "C"
          AND o.source = q.source COLLATE "C" AND o.identifier = q.identifier COLLATE "C"`.pipe(Effect.orDie)
        const out = keys.map(() => "")
        for (const row of rows) out[row.n - 1] = row.osv
        return out
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

      return PackageIndex.of({ packages, texts, record, changes })
    })
  )
}
