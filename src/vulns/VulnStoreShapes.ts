import type { Effect, Stream } from "effect"
import type { RecordCounts, SourceName } from "../../schema/Source.ts"
import type { ExploitRecord, Normalised } from "./Normalised.ts"

/**
 * The vulnerability store's vocabulary and the shape of its service, apart from
 * the service tag so the two stores and the modules they share import them
 * without importing the stores (VulnStore.ts builds its layers from both).
 */

/** One source's knowledge of an identifier. `record` is null while only the raw file exists (`processing`). */
export interface SourceRecord {
  readonly source: SourceName
  /** The identifier under which this source published the record (may be an alias of the query). */
  readonly identifier: string
  /**
   * CVE Record Format 5.1 JSON, with this source's enrichment in `containers.adp`; null while processing
   * (and when looked up with `bodies: false`). Parsed from `recordJson` on first access.
   */
  readonly record: Record<string, unknown> | null
  /**
   * The same record as the stored JSON text (EPSS merged): write it through as is
   * (`/vuln` is `[` + the `recordJson`s joined by `,` + `]`). Null when `record` is.
   * Both stores always set it (optional only so hand-built fixtures need not).
   */
  readonly recordJson: string | null
  /** Only the raw file is stored so far (phase 2 not done or failed): `/info`'s `processing`. Always set by both stores. */
  readonly processing: boolean
  readonly counts: RecordCounts
  readonly gcve: boolean
  readonly fetchedAt: Date
  readonly enrichedAt: Date | null
}

export interface Lookup {
  /** Identifiers linked to the query through the alias graph (the query itself excluded). */
  readonly aliases: ReadonlyArray<string>
  /** Every source record that knows the identifier directly or through an alias. */
  readonly records: ReadonlyArray<SourceRecord>
}

export interface ExploitPage {
  readonly count: number
  readonly summary: Readonly<Record<string, number>>
  /** Newest first; raw bodies (`rawContent`, `moduleContent`, ...) only when requested. */
  readonly exploits: ReadonlyArray<ExploitRecord>
}

/** Phase 1 input: one upstream item as fetched. */
export interface RawItem {
  /** The ingest source (`mitre`, `vulnrichment`, `exploit-db`, ...). */
  readonly source: string
  readonly identifier: string
  readonly content: string
  /** Content hash (hex); equal hash means the item is unchanged. */
  readonly hash: string
}

/** Where a walk over pending raw items resumes: the last key it read. */
export interface PendingCursor {
  readonly source: string
  readonly identifier: string
}

export type RawOutcome = "inserted" | "updated" | "unchanged"

export interface RawResult {
  readonly outcome: RawOutcome
  /** Phase 2 has not completed for this content yet (new, changed, failed before, or interrupted). */
  readonly pending: boolean
}

/** The key of a stored raw item and the hash phase 2 worked from. */
export interface RawKey {
  readonly source: string
  readonly identifier: string
  readonly hash: string
}

/** Phase 2 result of one raw item: everything it normalised to, replacing what it produced before. */
export interface NormalisedItem extends RawKey {
  readonly outputs: ReadonlyArray<Normalised>
  /** The raw item was first inserted by this run, so there is no earlier output to replace. */
  readonly fresh?: boolean
}

export interface FailedItem extends RawKey {
  readonly position: string
  readonly reason: string
  readonly failedAt?: Date
}

export interface LookupOptions {
  /**
   * Read the record bodies (`record`, `recordJson`); default true. `/info` and
   * existence checks need none of it: false reads only keys, counts and times.
   */
  readonly bodies?: boolean
  /**
   * Only the source records (with bodies, EPSS merged): no processing placeholders and
   * `aliases` empty. What `/vuln` serves, read with a lighter statement; default false.
   */
  readonly recordsOnly?: boolean
}

export type PageRequest = { readonly limit: number; readonly offset: number; readonly includeContent: boolean }

/** What the `VulnStore` service offers (the tag is in VulnStore.ts). */
export interface VulnStoreShape {
  /** One statement (one round trip, one snapshot): alias walk, records, processing items and EPSS. */
  lookup(identifier: string, options?: LookupOptions): Effect.Effect<Lookup>
  exploits(identifier: string, page: PageRequest): Effect.Effect<ExploitPage>
  /** Identifiers whose stored data changed (for cache invalidation). */
  readonly touched: Stream.Stream<ReadonlyArray<string>>
  /** Phase 1: upsert raw items keyed by (source, identifier); results in input order. Keys must be distinct. */
  putRaw(items: ReadonlyArray<RawItem>): Effect.Effect<ReadonlyArray<RawResult>>
  /**
   * Phase 2: store normalised output and failures of raw items; each item's earlier output is replaced.
   * Items whose stored raw content is another version by now (another ingestion stored over it) are
   * skipped; how many `done` items were stored is returned.
   */
  putNormalised(done: ReadonlyArray<NormalisedItem>, failed: ReadonlyArray<FailedItem>): Effect.Effect<number>
  /** Items whose last normalisation failed. */
  failed(): Effect.Effect<ReadonlyArray<FailedItem>>
  /**
   * Raw items whose current content phase 2 has neither completed nor failed on (what a run
   * stopped between its two transactions leaves), at most `limit`, in key order after `after`.
   */
  pendingRaw(after: PendingCursor | undefined, limit: number): Effect.Effect<ReadonlyArray<RawItem>>
  /**
   * Refreshes the planner's statistics of the store's tables (`ANALYZE`). The embedded database
   * has no autovacuum, and PostgreSQL's analyses a table at most once a minute, after the fact:
   * without this, the lookups during and right after a large first ingest are planned for empty
   * tables (a sequential scan and an on-disk sort of every record, about a second each).
   */
  refreshStatistics(): Effect.Effect<void>
}
