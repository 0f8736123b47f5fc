import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { countSyncRun } from "../metrics/DataMetrics.ts"

/** A source's position in its publisher's feed: what its next run asks from. */
export interface Cursor {
  readonly etag?: string | undefined
  readonly lastModified?: string | undefined
  /** Incremental feeds: the newest modification time stored (ISO 8601). */
  readonly watermark?: string | undefined
  /** Delta feeds: the name of the last delta applied. */
  readonly lastDelta?: string | undefined
  /** Feeds of several parts (OSV's ecosystems): each part's own watermark. */
  readonly positions?: Readonly<Record<string, string>> | undefined
  /** Feeds of several parts: the ETag of each part's change list, as read up to its position. */
  readonly etags?: Readonly<Record<string, string>> | undefined
}

/** One source's row: its cursor and how its runs went (`vdb sync status`). */
export interface FeedState {
  readonly source: string
  readonly cursor: Cursor
  readonly lastUrl: string | undefined
  readonly lastEtag: string | undefined
  readonly lastFetchedAt: Date | undefined
  readonly lastSuccessAt: Date | undefined
  readonly lastAttemptAt: Date | undefined
  readonly lastError: string | undefined
  readonly lastErrorKind: string | undefined
  readonly failures: number
  readonly recordsChanged: number
  readonly recordsFailed: number
  readonly nextRunAt: Date | undefined
}

/** A run that stored everything its fetch covered: the cursor moves. */
export interface RunSucceeded {
  readonly cursor: Cursor
  /** Provenance of what was stored; absent when the publisher answered 304 (nothing fetched). */
  readonly fetched?: { readonly url: string; readonly etag: string | undefined; readonly at: Date } | undefined
  readonly changed: number
  readonly failed: number
  readonly nextRunAt: Date
}

/** A run that did not complete: the cursor stays, the streak grows. */
export interface RunFailed {
  readonly error: string
  readonly kind: string
  readonly changed: number
  readonly failed: number
  readonly nextRunAt: Date
}

interface Row {
  readonly source: string
  readonly cursor: unknown
  readonly last_url: string | null
  readonly last_etag: string | null
  readonly last_fetched_at: Date | string | null
  readonly last_success_at: Date | string | null
  readonly last_attempt_at: Date | string | null
  readonly last_error: string | null
  readonly last_error_kind: string | null
  readonly failures: number
  readonly records_changed: number
  readonly records_failed: number
  readonly next_run_at: Date | string | null
}

const date = (v: Date | string | null) => v === null ? undefined : new Date(v)
const text = (v: string | null) => v ?? undefined

const cursorOf = (v: unknown): Cursor => {
  const parsed = typeof v === "string" ? JSON.parse(v) as unknown : v
  if (typeof parsed !== "object" || parsed === null) return {}
  const o = parsed as Record<string, unknown>
  const pick = (k: string) => typeof o[k] === "string" ? o[k] : undefined
  const texts = (k: string) =>
    typeof o[k] === "object" && o[k] !== null
      ? Object.fromEntries(Object.entries(o[k]).filter((e): e is [string, string] => typeof e[1] === "string"))
      : undefined
  return {
    etag: pick("etag"),
    lastModified: pick("lastModified"),
    watermark: pick("watermark"),
    lastDelta: pick("lastDelta"),
    positions: texts("positions"),
    etags: texts("etags")
  }
}

const toState = (r: Row): FeedState => ({
  source: r.source,
  cursor: cursorOf(r.cursor),
  lastUrl: text(r.last_url),
  lastEtag: text(r.last_etag),
  lastFetchedAt: date(r.last_fetched_at),
  lastSuccessAt: date(r.last_success_at),
  lastAttemptAt: date(r.last_attempt_at),
  lastError: text(r.last_error),
  lastErrorKind: text(r.last_error_kind),
  failures: Number(r.failures),
  recordsChanged: Number(r.records_changed),
  recordsFailed: Number(r.records_failed),
  nextRunAt: date(r.next_run_at)
})

/** Compact JSON of the cursor's set members only. */
const cursorJson = (c: Cursor) =>
  JSON.stringify(Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined)))

/**
 * The feeds' positions and run history (`feed_cursors`, migration 0630).
 * `succeeded` is called only after the ingest's summary, that is after every
 * batch the fetch gave is stored: the cursor never runs ahead of the data.
 */
export class FeedCursors extends Context.Service<FeedCursors, {
  get(source: string): Effect.Effect<FeedState | undefined>
  all(): Effect.Effect<ReadonlyArray<FeedState>>
  attempted(source: string, at: Date): Effect.Effect<void>
  succeeded(source: string, run: RunSucceeded): Effect.Effect<void>
  failed(source: string, run: RunFailed): Effect.Effect<void>
  /** `--full`: forget the cursor, so the next run fetches everything again. */
  reset(source: string): Effect.Effect<void>
}>()("vdb/feeds/FeedCursors") {
  static readonly layer = Layer.effect(
    FeedCursors,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const ensure = (source: string) =>
        sql`INSERT INTO feed_cursors (source) VALUES (${source}) ON CONFLICT (source) DO NOTHING`
      return FeedCursors.of({
        get: (source) =>
          sql<Row>`SELECT * FROM feed_cursors WHERE source = ${source}`.pipe(
            Effect.map((rows) => rows[0] === undefined ? undefined : toState(rows[0])),
            Effect.orDie
          ),
        all: () =>
          sql<Row>`SELECT * FROM feed_cursors ORDER BY source`.pipe(
            Effect.map((rows) => rows.map(toState)),
            Effect.orDie
          ),
        attempted: (source, at) =>
          ensure(source).pipe(
            Effect.andThen(sql`UPDATE feed_cursors SET last_attempt_at = ${at} WHERE source = ${source}`),
            Effect.asVoid,
            Effect.orDie
          ),
        succeeded: (source, run) =>
          Effect.gen(function*() {
            yield* ensure(source)
            yield* sql`UPDATE feed_cursors SET cursor = ${cursorJson(run.cursor)}::json,
            last_success_at = COALESCE(last_attempt_at, now()), last_error = NULL, last_error_kind = NULL, failures = 0,
            records_changed = ${run.changed}, records_failed = ${run.failed}, next_run_at = ${run.nextRunAt}
            WHERE source = ${source}`
            yield* countSyncRun(source, true, run.changed, run.failed)
            // A 304 fetched nothing: the provenance of the stored data stays the last download's.
            const fetched = run.fetched
            if (fetched !== undefined) {
              yield* sql`UPDATE feed_cursors SET last_url = ${fetched.url}, last_etag = ${fetched.etag ?? null},
              last_fetched_at = ${fetched.at} WHERE source = ${source}`
            }
          }).pipe(Effect.orDie),
        failed: (source, run) =>
          ensure(source).pipe(
            Effect.andThen(sql`UPDATE feed_cursors SET last_error = ${run.error}, last_error_kind = ${run.kind},
            failures = failures + 1, records_changed = ${run.changed}, records_failed = ${run.failed},
            next_run_at = ${run.nextRunAt} WHERE source = ${source}`),
            Effect.andThen(countSyncRun(source, false, run.changed, run.failed)),
            Effect.asVoid,
            Effect.orDie
          ),
        reset: (source) =>
          sql`UPDATE feed_cursors SET cursor = '{}' WHERE source = ${source}`.pipe(Effect.asVoid, Effect.orDie)
      })
    })
  )
}

/** How a run of one source opens: what every feed's run reads before its first request. */
export interface RunStart {
  readonly cursors: FeedCursors["Service"]
  /** Epoch milliseconds the run started at (the row's `last_attempt_at`). */
  readonly started: number
  readonly timeoutMs: number
  /** `started + timeoutMs`: every retry and wait of the run stays before it. */
  readonly deadline: number
  /** Where the run starts from: the stored cursor, or none under `--full`. */
  readonly cursor: Cursor
  /** The failure streak before this run (backoff, one warning per streak). */
  readonly failures: number
}

/**
 * The opening every feed's run shares: the row is marked attempted before
 * anything is fetched (so `sync status` shows a run that died), then the
 * cursor is read; `--full` starts from none (the stored one stays until the
 * run moves it).
 */
export const beginRun = Effect.fnUntraced(function*(
  source: string,
  options: { readonly full?: boolean | undefined; readonly timeoutMs?: number | undefined },
  defaultTimeoutMs: number
) {
  const cursors = yield* FeedCursors
  const started = yield* Clock.currentTimeMillis
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs
  yield* cursors.attempted(source, new Date(started))
  const state = yield* cursors.get(source)
  return {
    cursors,
    started,
    timeoutMs,
    deadline: started + timeoutMs,
    cursor: options.full === true ? {} : state?.cursor ?? {},
    failures: state?.failures ?? 0
  } satisfies RunStart
})
