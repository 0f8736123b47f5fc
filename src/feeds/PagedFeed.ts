import { Clock, Effect, Stream } from "effect"
import type { HttpClient } from "effect/http"
import type { IngestSource } from "../ingest/Upstream.ts"
import type { VulnStore } from "../vulns/VulnStore.ts"
import { guardBody } from "./BodyGuard.ts"
import { DEFAULT_LIMITS, recordFailure, storeFile, type SyncOptions, type SyncOutcome } from "./CatalogueSync.ts"
import { beginRun, type Cursor, type FeedCursors } from "./FeedCursors.ts"
import { type FeedRefused, refused } from "./FeedError.ts"
import { type FetchPlan, politeFetch } from "./PoliteFetch.ts"
import { type OpenFeedFile, storeFiles } from "./StoreFiles.ts"

/** One API page, read whole: pages are at most a few MB (100 records), and paging needs the parsed envelope. */
export interface Page {
  readonly url: string
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly bytes: Uint8Array
  readonly json: unknown
}

/**
 * GETs one page of an API (retries, Retry-After, caps as every feed) and
 * parses it; a body that is not JSON is `Corrupt` (an HTML error page passed
 * off as 200, a cut transfer), so the run stops before its cursor moves.
 */
export const fetchPage = (
  plan: FetchPlan,
  options: SyncOptions
): Effect.Effect<Page, FeedRefused, HttpClient.HttpClient> =>
  Effect.flatMap(fetchBytes(plan, options), (got) => {
    try {
      return Effect.succeed({ ...got, json: JSON.parse(Buffer.from(got.bytes).toString("utf8")) as unknown })
    } catch {
      return Effect.fail(refused("Corrupt", `${got.url}: the page is not JSON`))
    }
  })

/**
 * A page is held whole to read its envelope: 100 records are a few MB at
 * most, so anything past this is refused as `TooLarge` rather than buffered.
 */
export const MAX_PAGE_BYTES = 64 * 1024 * 1024

/** One small body, read whole within the caps (and `MAX_PAGE_BYTES`). */
export const fetchBytes = (
  plan: FetchPlan,
  options: SyncOptions
): Effect.Effect<Omit<Page, "json">, FeedRefused, HttpClient.HttpClient> =>
  Effect.scoped(Effect.gen(function*() {
    const limits = options.limits ?? DEFAULT_LIMITS
    const fetched = yield* politeFetch(plan)
    if (fetched._tag === "NotModified") {
      return yield* refused("HttpStatus", `${fetched.url} answered 304 to an unconditional request`)
    }
    const chunks: Array<Uint8Array> = []
    yield* Stream.runForEach(
      guardBody(
        fetched.body,
        { ...limits, maxBytes: Math.min(limits.maxBytes, MAX_PAGE_BYTES) },
        fetched.contentLength
      ),
      (chunk) => Effect.sync(() => void chunks.push(chunk))
    )
    return { url: fetched.url, headers: fetched.headers, bytes: Buffer.concat(chunks) }
  }))

/** What a paged run's body sees: its starting cursor, the deadline, and how to store a page and move the cursor. */
export interface PagedRun {
  readonly cursor: Cursor
  readonly started: number
  readonly deadline: number
  /** Stores one page's records through the ingestion (as `vdb ingest` would the same file). */
  readonly store: (
    fileName: string,
    bytes: Uint8Array
  ) => Effect.Effect<{ readonly items: number }, FeedRefused, VulnStore>
  /**
   * Stores many files in one ingestion (an archive's entries, by display name); a file that does
   * not parse counts as failed, the rest go on. A refusal from any file's bytes ends the run.
   */
  readonly storeFiles: (names: ReadonlyArray<string>, open: OpenFeedFile) => Effect.Effect<void, FeedRefused, VulnStore>
  /** Everything up to `cursor` is stored: a run cut after this resumes from it. */
  readonly advance: (cursor: Cursor) => Effect.Effect<void>
}

export interface PagedFeed {
  readonly source: IngestSource
  readonly intervalMs: number
  /** Default length of one run. */
  readonly timeoutMs: number
}

/**
 * The frame of an API feed's run: the cursor row is marked attempted, the
 * body pages from the stored cursor, each page goes through the ingestion,
 * and the cursor moves only where the body says what is stored. A refusal
 * ends the run as failed (cursor where the last `advance` left it), with the
 * publisher's Retry-After or backoff as the next try.
 */
export const runPaged = <R>(
  feed: PagedFeed,
  options: SyncOptions,
  body: (run: PagedRun) => Effect.Effect<{ readonly cursor: Cursor; readonly url: string }, FeedRefused, R>
): Effect.Effect<SyncOutcome, never, R | FeedCursors | VulnStore> =>
  Effect.gen(function*() {
    const { cursors, started, deadline, cursor, failures } = yield* beginRun(feed.source, options, feed.timeoutMs)
    let changed = 0
    let failed = 0
    const nextRunAt = (now: number) => new Date(now + feed.intervalMs)
    const run: PagedRun = {
      cursor,
      started,
      deadline,
      store: (fileName, bytes) =>
        Effect.gen(function*() {
          const stored = yield* storeFile(feed.source, fileName, Stream.make(bytes), options)
          changed += stored.changed
          failed += stored.failed
          if (stored.refusal !== undefined) return yield* stored.refusal
          return { items: stored.items }
        }),
      storeFiles: (names, open) =>
        Effect.gen(function*() {
          const stored = yield* storeFiles(feed.source, names, open, options)
          changed += stored.changed
          failed += stored.failed
          if (stored.refusal !== undefined) return yield* stored.refusal
        }),
      advance: (cursor) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          cursors.succeeded(feed.source, { cursor, changed, failed, nextRunAt: nextRunAt(now) }))
    }
    return yield* body(run).pipe(
      Effect.flatMap(({ cursor, url }) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          yield* cursors.succeeded(feed.source, {
            cursor,
            fetched: { url, etag: undefined, at: new Date(now) },
            changed,
            failed,
            nextRunAt: nextRunAt(now)
          })
          return {
            source: feed.source,
            status: changed > 0 ? "updated" : "unchanged",
            changed,
            failed,
            nextRunAt: nextRunAt(now)
          } satisfies SyncOutcome
        })
      ),
      Effect.catch((error: FeedRefused) =>
        recordFailure(feed.source, failures, error, changed, failed)
      )
    )
  }).pipe(Effect.withSpan("Feeds.syncPaged", { attributes: { source: feed.source } }))

/** Waits until `at` unless that passes the deadline; then ends the run as rate limited, to come back at `at`. */
export const waitUntil = (at: number, deadline: number, why: string) =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (now) =>
      at <= now ? Effect.void : at > deadline ? Effect.fail(refused("RateLimited", why, at)) : Effect.sleep(at - now)
  )

/** `YYYY-MM-DD` of epoch milliseconds (UTC). */
export const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10)
