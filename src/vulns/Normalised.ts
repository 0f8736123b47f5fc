import type { ExploitSummaryKey, IngestSource, RecordCounts, SourceName } from "../../schema/Source.ts"
import type { EpssScore } from "./EpssScore.ts"
import type { OsvForm } from "./OsvForm.ts"
import type { RecordText } from "./RecordText.ts"

/**
 * What the store keeps, as phase 2 of an ingest produces it: records, exploits
 * and EPSS scores. The store's own vocabulary, so ingestion depends on the
 * store and never the other way round.
 */

export interface KnownExploited {
  readonly cve: string
  readonly dateAdded: string
  readonly knownRansomwareCampaignUse: string
}

/** What phase 2 makes of one upstream item. */
export type Normalised =
  | {
    readonly kind: "record"
    /** `vulnrichment` records are stored under `mitre` (spec 1 names no such source); see docs/sources.md. */
    readonly source: SourceName
    /** The upstream the record came from (`vulnrichment` and `mitre` both store under `mitre`). */
    readonly upstream: IngestSource
    readonly identifier: string
    /** The record's own last-update time (ISO 8601) when it has one: picks the newer of two upstreams for one key. */
    readonly updatedAt?: string
    /** CVE Record Format 5.1 with this source's enrichment in `containers.adp`. */
    readonly record: Record<string, unknown>
    /** The record serialised for storage, when the producer already did it (the ingest workers do). */
    readonly body?: RecordText
    /** The upstream's own OSV record (OSV and GHSA sources): served as is by the package queries. */
    readonly osvDocument?: Record<string, unknown>
    /** The record's OSV form and package index entries, when the producer already made them (the ingest workers do). */
    readonly osv?: OsvForm
    /** Identifiers this record names as aliases (OSV `aliases`, EUVD aliases, GHSA references, …). */
    readonly aliases: ReadonlyArray<string>
    /**
     * The subset of `aliases` known only from references to a GitHub advisory page
     * (CVE records), not from an alias list. manifest.json counts only alias lists:
     * see docs/sources.md, "Aliases".
     */
    readonly referencedAliases?: ReadonlyArray<string>
    readonly counts: RecordCounts
    readonly gcve: boolean
    readonly knownExploited?: KnownExploited
  }
  | {
    readonly kind: "exploits"
    /** Summary key of spec 1 these exploits count under (`exploitDb`, `metasploit`, `nuclei`, `github`, `other`). */
    readonly summaryKey: ExploitSummaryKey
    readonly exploits: ReadonlyArray<ExploitRecord & { readonly raw?: string }>
  }
  | { readonly kind: "epss"; readonly scores: ReadonlyArray<EpssScore> }

export interface ExploitRecord {
  readonly uuid: string
  readonly cveId: string
  readonly source: string
  readonly url?: string
  readonly type: "exploit" | "poc" | "sighting"
  readonly title?: string
  readonly createdAt?: number
  /** The per-source object of spec 1 (`exploitDb`, `metasploit`, `nuclei`, ...), keyed by its member name. */
  readonly details: Readonly<Record<string, Record<string, unknown>>>
}
