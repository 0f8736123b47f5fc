import { Effect, Stream } from "effect"
import { FileUnreadable } from "../ingest/FileBytes.ts"
import { ingestFiles } from "../ingest/Ingest.ts"
import type { IngestFile, IngestSummary } from "../ingest/IngestEvents.ts"
import type { IngestOptions } from "../ingest/IngestOptions.ts"
import type { IngestSource } from "../ingest/Upstream.ts"
import { type FeedRefused, refused } from "./FeedError.ts"
import { SyncProgress } from "./SyncProgress.ts"

/** One file of a feed's batch: what positions name it by, and its bytes. */
export type OpenFeedFile = (index: number) => Stream.Stream<Uint8Array, FeedRefused | FileUnreadable>

export interface StoreFilesOptions {
  readonly ingest?: IngestOptions | undefined
  /**
   * Files are documents of many records (API pages): one that does not parse
   * to its end is the run's refusal (`Corrupt`), not one failed record.
   */
  readonly documents?: boolean | undefined
}

/**
 * Stores many files of one source (a zip's entries, the per-record files of a
 * delta, an API's pages) in one ingestion run, as `vdb ingest` would store
 * them given as files: one normalise pool, one summary. A file of one record
 * that does not parse is one failed record and the rest go on. A `FeedRefused`
 * from any file's bytes (a cut transfer, a bomb) is the run's refusal: what
 * was stored before it stays, and the caller does not move the cursor. A
 * `FileUnreadable` (a record the publisher no longer has) is counted failed
 * like a malformed one.
 *
 * `names` may grow while the run reads: a name added by the time a file's
 * bytes end is read after it (a paged API learns its next page from the one
 * being read).
 */
export const storeFiles = Effect.fnUntraced(function*(
  source: IngestSource,
  names: ReadonlyArray<string>,
  open: OpenFeedFile,
  options: StoreFilesOptions
) {
  let cut: FeedRefused | undefined
  let wholeFile: string | undefined
  let summary: IngestSummary | undefined
  const files: Array<IngestFile> = []
  const learn = () => {
    for (let n = files.length; n < names.length; n++) files.push({ source, display: names[n]! })
  }
  learn()
  const plan = { files, ignored: [] }
  const bytes = (index: number) =>
    cut !== undefined
      ? Stream.fail(new FileUnreadable({ reason: "skipped after the feed was refused" }))
      : open(index).pipe(
        Stream.mapError((e) => {
          if (e._tag === "FileUnreadable") return e
          cut ??= e
          return new FileUnreadable({ reason: e.message })
        }),
        Stream.concat(Stream.fromEffectDrain(Effect.sync(learn)))
      )
  const progress = yield* SyncProgress
  const documents = options.documents === true
  if (names.length > 0) {
    yield* Stream.runForEach(ingestFiles(plan, bytes, options.ingest), (event) =>
      Effect.suspend(() => {
        // A problem of a page as a whole (not one record): it did not parse to its end.
        if (documents && event._tag === "Problem" && names.includes(event.position)) {
          wholeFile ??= `${event.position}: ${event.reason}`
        }
        if (event._tag === "Progress") return progress.file(source, event.items)
        if (event._tag === "Summary") summary = event
        return Effect.void
      }))
  }
  if (summary !== undefined) yield* progress.fileDone(source, summary.items)
  const changed = summary === undefined ? 0 : summary.inserted + summary.updated
  // Files skipped after a refusal are not failed records: the next run reads them.
  const failed = cut === undefined ? summary?.skipped ?? 0 : 0
  const refusal = cut ?? (wholeFile === undefined ? undefined : refused("Corrupt", wholeFile))
  return { changed, failed, items: summary?.items ?? 0, refusal }
})
