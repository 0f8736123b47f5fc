import { Effect, Schema, SchemaIssue, SchemaTransformation } from "effect"
import { Buffer } from "node:buffer"
import { INGEST_FORMATS } from "./formats/itemReader.ts"
import { INGEST_SOURCES } from "./Upstream.ts"

/**
 * What `bin/vdb ingest` is asked to do, in the CLI's own process: `all` is a
 * folder laid out like `../shared/data`; a path `-` is standard input;
 * `format` overrides the format a file's name gives.
 */
export interface IngestRequest {
  readonly source?: string | undefined
  readonly paths: ReadonlyArray<string>
  readonly all?: string | undefined
  readonly format?: typeof INGEST_FORMATS[number] | undefined
}

/** One file of an ingest run as the server sees it: never a path, only what its bytes are and the name positions use. */
export const IngestFile = Schema.Struct({
  source: Schema.Literals(INGEST_SOURCES),
  display: Schema.String,
  format: Schema.optional(Schema.Literals(INGEST_FORMATS))
})
export type IngestFile = typeof IngestFile.Type

export const IgnoredFile = Schema.Struct({ path: Schema.String, reason: Schema.String })

/** Opens a run: the files whose bytes follow as `IngestChunk`s, in order. `run` is chosen by the client. */
export const IngestBegin = Schema.Struct({
  run: Schema.String,
  files: Schema.Array(IngestFile),
  ignored: Schema.Array(IgnoredFile)
})
export type IngestBegin = typeof IngestBegin.Type

/** Bytes a standard base64 text of this length decodes to (-1 when the length is no multiple of 4). */
const decodedLength = (text: string) =>
  text.length % 4 !== 0 ? -1 : (text.length / 4) * 3 - (text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0)

/**
 * File bytes as the admin socket's NDJSON carries them: standard base64, encoded and decoded by
 * Node's native codec. `Schema.Uint8Array`'s own JSON form does it in JavaScript, and decoding the
 * 256 KiB chunks that way took a tenth of the server's main thread during an ingest (docs/ingest.md,
 * "Transport"). Node's decoder skips what is not base64, so a text whose bytes come out shorter
 * than its length promises is refused.
 */
export const ChunkBytes = Schema.String.pipe(Schema.decodeTo(
  Schema.Uint8Array,
  SchemaTransformation.transformEffect<Uint8Array, string>({
    decode: (text, options) => {
      const bytes = Buffer.from(text, "base64")
      return bytes.length === decodedLength(text)
        ? Effect.succeed<Uint8Array>(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length))
        : Effect.fail(new SchemaIssue.InvalidValue({ expected: "standard base64" }, undefined, options))
    },
    encode: (bytes) => Effect.succeed(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64"))
  })
))

/**
 * Bytes of file `file` (an index into the run's files), uncompressed, at most
 * `CHUNK_BYTES`. `last` ends the file; `error` says the client could not read
 * it to the end (reported as a problem of that file, and the run goes on).
 */
export const IngestChunk = Schema.Struct({
  run: Schema.String,
  file: Schema.Int,
  bytes: ChunkBytes,
  last: Schema.Boolean,
  error: Schema.optional(Schema.String)
})
export type IngestChunk = typeof IngestChunk.Type

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
  ignoredFiles: Schema.Array(IgnoredFile)
}) {}

export const IngestEvent = Schema.Union([IngestProgress, IngestProblem, IngestSummary])
export type IngestEvent = typeof IngestEvent.Type

/** The first event of a run on the admin socket: the server takes chunks from now on. */
export class IngestReady extends Schema.TaggedClass<IngestReady>()("Ready", {
  run: Schema.String
}) {}

export const IngestRunEvent = Schema.Union([IngestReady, IngestProgress, IngestProblem, IngestSummary])
export type IngestRunEvent = typeof IngestRunEvent.Type

export const FailedNormalisation = Schema.Struct({
  source: Schema.String,
  identifier: Schema.String,
  position: Schema.String,
  reason: Schema.String,
  failedAt: Schema.optional(Schema.String)
})
export type FailedNormalisation = typeof FailedNormalisation.Type
