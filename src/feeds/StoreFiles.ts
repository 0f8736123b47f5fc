import { Effect, Stream } from "effect"
import { FileUnreadable } from "../ingest/FileBytes.ts"
import { ingestFiles } from "../ingest/Ingest.ts"
import type { IngestSummary } from "../ingest/IngestEvents.ts"
import type { IngestOptions } from "../ingest/IngestOptions.ts"
import type { IngestSource } from "../ingest/Upstream.ts"
import type { FeedRefused } from "./FeedError.ts"

/** One file of a feed's batch: what positions name it by, and its bytes. */
export type OpenFeedFile = (index: number) => Stream.Stream<Uint8Array, FeedRefused | FileUnreadable>

/**
 * Stores many small files of one source (a zip's entries, the per-record
 * files of a delta) in one ingestion run, as `vdb ingest` would store them
 * given as files: one normalise pool, one summary. Each file is one record,
 * so a file that does not parse is one failed record and the rest go on.
 * A `FeedRefused` from any file's bytes (a cut transfer, a bomb) is the
 * run's refusal: what was stored before it stays, and the caller does not
 * move the cursor. A `FileUnreadable` (a record the publisher no longer has)
 * is counted failed like a malformed one.
 */
export const storeFiles = Effect.fnUntraced(function*(
  source: IngestSource,
  names: ReadonlyArray<string>,
  open: OpenFeedFile,
  options: { readonly ingest?: IngestOptions | undefined }
) {
  let cut: FeedRefused | undefined
  let summary: IngestSummary | undefined
  const plan = { files: names.map((display) => ({ source, display })), ignored: [] }
  const bytes = (index: number) =>
    cut !== undefined
      ? Stream.fail(new FileUnreadable({ reason: "skipped after the feed was refused" }))
      : open(index).pipe(
        Stream.mapError((e) => {
          if (e._tag === "FileUnreadable") return e
          cut ??= e
          return new FileUnreadable({ reason: e.message })
        })
      )
  if (names.length > 0) {
    yield* Stream.runForEach(ingestFiles(plan, bytes, options.ingest), (event) =>
      Effect.sync(() => {
        if (event._tag === "Summary") summary = event
      }))
  }
  const changed = summary === undefined ? 0 : summary.inserted + summary.updated
  // Files skipped after a refusal are not failed records: the next run reads them.
  const failed = cut === undefined ? summary?.skipped ?? 0 : 0
  return { changed, failed, items: summary?.items ?? 0, refusal: cut }
})
