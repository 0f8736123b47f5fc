import { Clock, Config, Effect, Option, Stream } from "effect"
import { HttpClient } from "effect/http"
import type { VulnStore } from "../vulns/VulnStore.ts"
import { guardBody } from "./BodyGuard.ts"
import { DEFAULT_LIMITS, recordFailure, type SyncOptions, type SyncOutcome } from "./CatalogueSync.ts"
import { beginRun, type FeedCursors } from "./FeedCursors.ts"
import type { FeedRefused } from "./FeedError.ts"
import { feedUrl } from "./FeedUrl.ts"
import { politeFetch } from "./PoliteFetch.ts"
import { storeFiles } from "./StoreFiles.ts"

/**
 * NVD's CVE API 2.0 (https://nvd.nist.gov/developers/vulnerabilities): pages of
 * at most 2,000 CVEs by `startIndex`; `lastModStartDate`/`lastModEndDate`
 * windows of at most 120 days; an optional `apiKey` header; 5 requests per
 * rolling 30 s without a key, 50 with one.
 */
export const NVD_URL = "https://services.nvd.nist.gov/rest/json/cves/2.0"
const PAGE_SIZE = 2000
const WINDOW_MS = 120 * 24 * 60 * 60 * 1000
const HOUR = 60 * 60 * 1000
/**
 * The gap between the starts of two requests that keeps within the published rate: 30 s / 5, or
 * 30 s / 50. Counted from the previous request's start, not its end: the limit counts requests in
 * a rolling window, and a gap after each page was stored added that page's storing to every page.
 */
const GAP_WITHOUT_KEY_MS = 6000
const GAP_WITH_KEY_MS = 600

export interface NvdOptions extends SyncOptions {
  /** Between the starts of two requests; default from the published rate limit (tests shorten it). */
  readonly requestGapMs?: number | undefined
  /** CVEs a page (NVD's maximum by default; tests page smaller). */
  readonly pageSize?: number | undefined
}

/** NVD's date form: ISO 8601 with milliseconds and an explicit offset. */
const nvdDate = (ms: number) => new Date(ms).toISOString().replace("Z", "+00:00")

/** `totalResults` from the envelope's head (NVD writes it before `vulnerabilities`). */
const totalIn = (head: string) => {
  const m = /"totalResults"\s*:\s*(\d{1,9})/.exec(head)
  return m === null ? undefined : Number(m[1])
}

/**
 * One run: from the stored watermark to now in windows of at most 120 days
 * (the first run pages through everything with no window), each window page
 * by page. Each page goes through the same ingestion as a file; the watermark
 * moves to a window's end once all of its pages are stored, so a run cut in a
 * window redoes only that window.
 */
export const syncNvd = Effect.fn("Feeds.syncNvd")(function*(options: NvdOptions = {}) {
  const source = "nist-nvd" as const
  const { cursors, started, deadline, cursor, failures } = yield* beginRun(source, options, 6 * HOUR)
  const apiKey = yield* Config.option(Config.Redacted("VDB_NVD_API_KEY")).pipe(Effect.orDie)
  const base = yield* feedUrl(source, NVD_URL).pipe(Effect.orDie)
  const gap = options.requestGapMs ?? (Option.isSome(apiKey) ? GAP_WITH_KEY_MS : GAP_WITHOUT_KEY_MS)
  const limits = options.limits ?? DEFAULT_LIMITS
  const pageSize = Math.min(PAGE_SIZE, options.pageSize ?? PAGE_SIZE)
  let changed = 0
  let failed = 0
  let lastRequestAt: number | undefined

  const windows: Array<readonly [number, number] | undefined> = []
  if (cursor.watermark === undefined) windows.push(undefined)
  else {for (let from = Date.parse(cursor.watermark); from < started; from += WINDOW_MS) {
      windows.push([from, Math.min(from + WINDOW_MS, started)])
    }}

  /**
   * One request: waits for the rate's gap after the previous request's start, then streams the
   * page's body through the caps, reading `totalResults` from its head as it passes.
   */
  const request = (window: readonly [number, number] | undefined, startIndex: number, onTotal: (n: number) => void) =>
    Stream.unwrap(Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      if (lastRequestAt !== undefined && lastRequestAt + gap > now) yield* Effect.sleep(lastRequestAt + gap - now)
      lastRequestAt = yield* Clock.currentTimeMillis
      const url = new URL(base)
      url.searchParams.set("resultsPerPage", String(pageSize))
      url.searchParams.set("startIndex", String(startIndex))
      if (window !== undefined) {
        url.searchParams.set("lastModStartDate", nvdDate(window[0]))
        url.searchParams.set("lastModEndDate", nvdDate(window[1]))
      }
      const fetched = yield* politeFetch({
        url: url.toString(),
        contentTypes: ["application/json"],
        deadline,
        attempts: options.attempts,
        backoffBaseMs: options.backoffBaseMs,
        ...(Option.isSome(apiKey) ? { secretHeaders: { apiKey: apiKey.value } } : {})
      })
      if (fetched._tag === "NotModified") return Stream.empty
      let head = ""
      return guardBody(fetched.body, limits, fetched.contentLength).pipe(
        Stream.tap((chunk) =>
          Effect.sync(() =>
            void (head.length < 1024 && (head += Buffer.from(chunk.subarray(0, 1024)).toString("latin1")))
          )
        ),
        // Whole: the page's total says whether another follows.
        Stream.concat(Stream.fromEffectDrain(Effect.sync(() => onTotal(totalIn(head) ?? 0))))
      )
    })).pipe(Stream.scoped)

  /**
   * A window's pages in one ingestion run (one pool, one summary, batches of 2,000 across pages, the
   * next page fetched while the last one's batches are written): each page, once read whole, adds
   * the next one to the run while its `startIndex` is under the total. The window's records are
   * all stored when the run ends.
   */
  const storeWindow = (window: readonly [number, number] | undefined) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const names = [`nvd-cves-0.json`]
      const open = (n: number) =>
        request(window, n * pageSize, (total) => {
          const next = (n + 1) * pageSize
          if (next < total && names.length === n + 1) names.push(`nvd-cves-${next}.json`)
        }).pipe(Stream.provideService(HttpClient.HttpClient, client))
      const stored = yield* storeFiles(source, names, open, { ingest: options.ingest, documents: true })
      changed += stored.changed
      failed += stored.failed
      if (stored.refusal !== undefined) return yield* stored.refusal
    })

  const run = Effect.gen(function*() {
    let watermark = cursor.watermark
    for (const window of windows) {
      yield* storeWindow(window)
      // Everything modified up to the window's end is stored: the next run starts there.
      watermark = new Date(window?.[1] ?? started).toISOString()
      yield* cursors.succeeded(source, { cursor: { watermark }, changed, failed, nextRunAt: new Date(started + HOUR) })
    }
    const now = yield* Clock.currentTimeMillis
    yield* cursors.succeeded(source, {
      cursor: { watermark },
      fetched: { url: base, etag: undefined, at: new Date(now) },
      changed,
      failed,
      nextRunAt: new Date(now + HOUR)
    })
    return {
      source,
      status: changed > 0 ? "updated" : "unchanged",
      changed,
      failed,
      nextRunAt: new Date(now + HOUR)
    } satisfies SyncOutcome
  })

  return yield* run.pipe(
    Effect.catch((error: FeedRefused) => recordFailure(source, failures, error, changed, failed))
  )
}) as (options?: NvdOptions) => Effect.Effect<SyncOutcome, never, FeedCursors | VulnStore | HttpClient.HttpClient>
