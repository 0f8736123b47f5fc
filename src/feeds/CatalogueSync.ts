import { Clock, Effect, Stream } from "effect"
import type { HttpClient } from "effect/http"
import { FileUnreadable } from "../ingest/FileBytes.ts"
import { ingestFiles } from "../ingest/Ingest.ts"
import type { IngestSummary } from "../ingest/IngestEvents.ts"
import type { IngestOptions } from "../ingest/IngestOptions.ts"
import type { IngestSource } from "../ingest/Upstream.ts"
import type { VulnStore } from "../vulns/VulnStore.ts"
import { backoffMs } from "./Backoff.ts"
import { type BodyLimits, guardBody, gunzipGuarded } from "./BodyGuard.ts"
import type { CatalogueFeed } from "./Catalogues.ts"
import { beginRun, FeedCursors } from "./FeedCursors.ts"
import { FeedRefused, refused } from "./FeedError.ts"
import { feedUrl } from "./FeedUrl.ts"
import { politeFetch } from "./PoliteFetch.ts"
import { SyncProgress } from "./SyncProgress.ts"

/** How one source's run ended (`vdb sync`'s line per source). */
export interface SyncOutcome {
  readonly source: string
  /** `updated`: fetched and stored; `unchanged`: the publisher answered 304; `failed`: nothing moved. */
  readonly status: "updated" | "unchanged" | "failed"
  /** Records inserted or updated by this run (also on a failed run: what was stored stays). */
  readonly changed: number
  /** Records that could not be read or normalised (counted; the rest went on). */
  readonly failed: number
  readonly error?: { readonly kind: string; readonly message: string } | undefined
  readonly nextRunAt: Date
}

export interface SyncOptions {
  /** Ignore the stored cursor: fetch everything unconditionally. */
  readonly full?: boolean | undefined
  /** The whole run (retries, download, ingest) of one source. Default 30 min. */
  readonly timeoutMs?: number | undefined
  readonly attempts?: number | undefined
  readonly backoffBaseMs?: number | undefined
  readonly limits?: BodyLimits | undefined
  readonly ingest?: IngestOptions | undefined
}

/** Catalogues are tens of MB at most (EPSS inflates to about 15 MB, the KEV JSON to 1.5 MB). */
export const DEFAULT_LIMITS: BodyLimits = {
  maxBytes: 512 * 1024 * 1024,
  maxInflatedBytes: 2 * 1024 * 1024 * 1024,
  maxRatio: 100
}
const DEFAULT_TIMEOUT_MS = 30 * 60 * 1000

/** Stores the fetched file as `vdb ingest` would; says which refusal cut its body, if any. */
export const storeFile = (
  source: IngestSource,
  fileName: string,
  body: Stream.Stream<Uint8Array, FeedRefused>,
  options: SyncOptions
) =>
  Effect.gen(function*() {
    let cut: FeedRefused | undefined
    let wholeFile: string | undefined
    let summary: IngestSummary | undefined
    const bytes = body.pipe(
      Stream.tapError((e) => Effect.sync(() => void (cut = e))),
      Stream.mapError((e) => new FileUnreadable({ reason: e.message }))
    )
    const plan = { files: [{ source, display: fileName }], ignored: [] }
    const progress = yield* SyncProgress
    yield* Stream.runForEach(ingestFiles(plan, () => bytes, options.ingest), (event) =>
      Effect.suspend(() => {
        // A problem of the file as a whole (not one record): the document did not parse to its end.
        if (event._tag === "Problem" && event.position === fileName) wholeFile ??= event.reason
        if (event._tag === "Progress") return progress.file(source, event.items)
        if (event._tag === "Summary") summary = event
        return Effect.void
      }))
    if (summary !== undefined) yield* progress.fileDone(source, summary.items)
    const changed = summary === undefined ? 0 : summary.inserted + summary.updated
    const failed = summary?.skipped ?? 0
    const refusal = cut ?? (wholeFile === undefined ? undefined : refused("Corrupt", `${fileName}: ${wholeFile}`))
    return { changed, failed, items: summary?.items ?? 0, refusal }
  })

/**
 * One run of a catalogue feed: a conditional GET with the stored validators;
 * on 200 the body streams through the caps into the ingestion, and only when
 * the ingestion has stored all of it do the new validators become the cursor.
 * A refused or cut body leaves the cursor where it was (the next run fetches
 * the whole file again; records it stored are re-read as unchanged).
 */
export const syncCatalogue = Effect.fn("Feeds.syncCatalogue")(
  function*(feed: CatalogueFeed, options: SyncOptions = {}) {
    const { cursors, deadline, timeoutMs, cursor, failures } = yield* beginRun(feed.source, options, DEFAULT_TIMEOUT_MS)
    const limits = options.limits ?? DEFAULT_LIMITS
    let changed = 0
    let failed = 0

    const run = Effect.scoped(Effect.gen(function*() {
      const url = yield* feedUrl(feed.source, feed.url).pipe(Effect.orDie)
      const fetched = yield* politeFetch({
        url,
        etag: cursor.etag,
        lastModified: cursor.lastModified,
        contentTypes: feed.contentTypes,
        deadline,
        attempts: options.attempts,
        backoffBaseMs: options.backoffBaseMs
      })
      const now = new Date(yield* Clock.currentTimeMillis)
      const nextRunAt = new Date(now.getTime() + feed.intervalMs)
      if (fetched._tag === "NotModified") {
        yield* cursors.succeeded(feed.source, { cursor, changed: 0, failed: 0, nextRunAt })
        return { source: feed.source, status: "unchanged", changed: 0, failed: 0, nextRunAt } satisfies SyncOutcome
      }
      const guarded = guardBody(fetched.body, limits, fetched.contentLength)
      const stored = yield* storeFile(
        feed.source,
        feed.fileName,
        feed.gzip ? gunzipGuarded(guarded, limits) : guarded,
        options
      )
      changed = stored.changed
      failed = stored.failed
      if (stored.refusal !== undefined) return yield* stored.refusal
      yield* cursors.succeeded(feed.source, {
        cursor: { etag: fetched.etag, lastModified: fetched.lastModified },
        fetched: { url: fetched.url, etag: fetched.etag, at: now },
        changed,
        failed,
        nextRunAt
      })
      return { source: feed.source, status: "updated", changed, failed, nextRunAt } satisfies SyncOutcome
    }))

    return yield* run.pipe(
      Effect.timeoutOrElse({
        duration: timeoutMs,
        orElse: () => Effect.fail(refused("Timeout", `the run passed its ${Math.round(timeoutMs / 1000)} s limit`))
      }),
      Effect.catch((error: FeedRefused) => recordFailure(feed.source, failures, error, changed, failed))
    )
  }
) as (
  feed: CatalogueFeed,
  options?: SyncOptions
) => Effect.Effect<SyncOutcome, never, FeedCursors | VulnStore | HttpClient.HttpClient>

/** A run that ended refused: the cursor stays, the next run is due after backoff or the publisher's Retry-After. */
export const recordFailure = Effect.fnUntraced(
  function*(source: string, streak: number, error: FeedRefused, changed: number, failed: number) {
    const cursors = yield* FeedCursors
    const now = yield* Clock.currentTimeMillis
    const nextRunAt = new Date(error.retryAt ?? now + (yield* backoffMs(streak)))
    yield* cursors.failed(source, { error: error.message, kind: error.kind, changed, failed, nextRunAt })
    // One warning per failure streak, not one per retry or per run.
    if (streak === 0) {
      yield* Effect.logWarning(`feed ${source} failed: ${error.message}; next try at ${nextRunAt.toISOString()}`)
    }
    return {
      source,
      status: "failed",
      changed,
      failed,
      error: { kind: error.kind, message: error.message },
      nextRunAt
    } satisfies SyncOutcome
  }
)
