import { Schema } from "effect"

/** The record sources of spec 1 (the `sources[].name` values of `/info`). */
export const SourceName = Schema.Literals([
  "mitre",
  "nist-nvd",
  "vulncheck-nvd",
  "vulncheck-kev",
  "cisa-kev",
  "ghsa",
  "osv",
  "euvd"
])
export type SourceName = typeof SourceName.Type

/** Per-record counts for `/info`, computed once at normalisation time. */
export const RecordCounts = Schema.Struct({
  references: Schema.Int,
  problemTypes: Schema.Int,
  metrics: Schema.Int,
  affected: Schema.Int,
  impacts: Schema.Int,
  descriptions: Schema.Int,
  scorecards: Schema.Int
})
export type RecordCounts = typeof RecordCounts.Type

export const ExploitSummaryKey = Schema.Literals([
  "exploitDb",
  "metasploit",
  "nuclei",
  "vulnerabilityLab",
  "vulnCheckXDB",
  "vulnCheckReportedExploitation",
  "crowdSec",
  "github",
  "other"
])
export type ExploitSummaryKey = typeof ExploitSummaryKey.Type

/** The `/exploits` summary keys, in spec order. */
export const EXPLOIT_SUMMARY_KEYS: ReadonlyArray<ExploitSummaryKey> = ExploitSummaryKey.literals

/** Every source `bin/vdb ingest SOURCE` accepts. */
export const INGEST_SOURCES = [
  "mitre",
  "nist-nvd",
  "vulncheck-nvd",
  "cisa-kev",
  "vulncheck-kev",
  "ghsa",
  "osv",
  "euvd",
  "vulnrichment",
  "epss",
  "exploit-db",
  "metasploit",
  "nuclei",
  "poc-in-github"
] as const
export type IngestSource = typeof INGEST_SOURCES[number]
