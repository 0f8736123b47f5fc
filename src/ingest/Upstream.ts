export { INGEST_SOURCES, type IngestSource } from "../../schema/Source.ts"
import type { IngestSource } from "../../schema/Source.ts"

/** The sources that publish a CSV form (EPSS and Exploit-DB only that; KEV also as JSON). */
export const CSV_SOURCES: ReadonlyArray<IngestSource> = ["epss", "exploit-db", "cisa-kev", "vulncheck-kev"]
export type { EpssScore } from "../vulns/EpssScore.ts"
export type { KnownExploited, Normalised } from "../vulns/Normalised.ts"

/** One upstream item as read from a file, before normalisation: stored raw first (phase 1). */
export interface UpstreamItem {
  readonly source: IngestSource
  /** The identifier the source uses for this item (CVE-…, GHSA-…, EDB id, …). */
  readonly identifier: string
  /** The item's own bytes as text (a whole file, one NDJSON line, one CSV row, one array element re-serialised). */
  readonly raw: string
  /** Where it came from, for error reports: `file:line` or `file#index`. */
  readonly position: string
  readonly parsed: unknown
}

/** A bad item: reported with file, position and reason, then skipped. */
export interface ItemProblem {
  readonly position: string
  readonly reason: string
}
