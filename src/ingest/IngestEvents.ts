import { Schema } from "effect"

/** What `bin/vdb ingest` is asked to do; `all` is a folder laid out like `../shared/data`. */
export const IngestRequest = Schema.Struct({
  source: Schema.optional(Schema.String),
  paths: Schema.Array(Schema.String),
  all: Schema.optional(Schema.String)
})
export type IngestRequest = typeof IngestRequest.Type

const Tally = {
  files: Schema.Int,
  totalFiles: Schema.Int,
  /** Items read (records, rows, lines), problems included. */
  items: Schema.Int,
  inserted: Schema.Int,
  updated: Schema.Int,
  unchanged: Schema.Int,
  /** The same (source, identifier) again within this run: the first one is kept. */
  duplicates: Schema.Int,
  /** Of the duplicates, those whose content differed from the kept first one. */
  conflicting: Schema.Int,
  /** Items normalised by this run (phase 2). */
  normalised: Schema.Int,
  skipped: Schema.Int,
  elapsedMs: Schema.Number,
  perSecond: Schema.Number
}
export type Tally = Schema.Struct.Type<typeof Tally>

/** Emitted after every batch commits. */
export class IngestProgress extends Schema.TaggedClass<IngestProgress>()("Progress", {
  ...Tally,
  file: Schema.String
}) {}

/** A bad item: reported with file, position and reason, then skipped. */
export class IngestProblem extends Schema.TaggedClass<IngestProblem>()("Problem", {
  position: Schema.String,
  reason: Schema.String
}) {}

/** The last event of a run. */
export class IngestSummary extends Schema.TaggedClass<IngestSummary>()("Summary", {
  ...Tally,
  /** Skipped items by reason. */
  skippedReasons: Schema.Record(Schema.String, Schema.Int),
  /** The first duplicates whose content differed: which position was kept and which dropped. */
  conflicts: Schema.Array(Schema.Struct({
    source: Schema.String,
    identifier: Schema.String,
    kept: Schema.String,
    dropped: Schema.String
  })),
  /** Files under `--all` that belong to no source (README, schemas, cross-check data). */
  ignoredFiles: Schema.Array(Schema.Struct({ path: Schema.String, reason: Schema.String }))
}) {}

export const IngestEvent = Schema.Union([IngestProgress, IngestProblem, IngestSummary])
export type IngestEvent = typeof IngestEvent.Type

export const FailedNormalisation = Schema.Struct({
  source: Schema.String,
  identifier: Schema.String,
  position: Schema.String,
  reason: Schema.String,
  failedAt: Schema.optional(Schema.String)
})
export type FailedNormalisation = typeof FailedNormalisation.Type
