import { Effect } from "effect"
import type { HttpClient } from "effect/http"
import type { VulnStore } from "../vulns/VulnStore.ts"
import type { SyncOptions, SyncOutcome } from "./CatalogueSync.ts"
import type { FeedCursors } from "./FeedCursors.ts"
import { type FeedRefused, refused } from "./FeedError.ts"
import { feedUrl } from "./FeedUrl.ts"
import { fetchPage, isoDay, runPaged } from "./PagedFeed.ts"

/**
 * ENISA's EUVD search API (https://euvd.enisa.europa.eu/apidoc): `GET
 * /api/search` with `fromUpdatedDate`/`toUpdatedDate` (whole days, both
 * included), `page` from 0 and `size` at most 100, answering `{items, total}`.
 * No key and no published rate limit: one request a second.
 */
export const EUVD_URL = "https://euvdservices.enisa.europa.eu/api/search"
const SIZE = 100
const DAY = 24 * 60 * 60 * 1000
/**
 * Windows of updates a run walks through, oldest first; the watermark moves
 * at each window's end. A year at most: a first load is some 28 windows, and
 * a window holding more than can be paged is halved anyway.
 */
const WINDOW_DAYS = 365
/** A first load starts here: the oldest `dateUpdated` in EUVD is from 1999. */
const EPOCH = Date.UTC(1999, 0, 1)
/**
 * Deep paging is capped by search back ends (10,000 hits is the usual
 * window): a window with more is split in halves before it is paged.
 */
const MAX_HITS = 10_000
const GAP_MS = 1000

export interface EuvdOptions extends SyncOptions {
  readonly requestGapMs?: number | undefined
  readonly pageSize?: number | undefined
}

export const syncEuvd = (
  options: EuvdOptions = {}
): Effect.Effect<SyncOutcome, never, FeedCursors | VulnStore | HttpClient.HttpClient> =>
  runPaged(
    { source: "euvd", intervalMs: 6 * 60 * 60 * 1000, timeoutMs: 6 * 60 * 60 * 1000 },
    options,
    (run) =>
      Effect.gen(function*() {
        const base = yield* feedUrl("euvd", EUVD_URL).pipe(Effect.orDie)
        const size = Math.min(SIZE, options.pageSize ?? SIZE)
        const gap = options.requestGapMs ?? GAP_MS
        let requests = 0

        const page = (from: number, to: number, n: number) =>
          Effect.gen(function*() {
            if (requests++ > 0) yield* Effect.sleep(gap)
            const url = new URL(base)
            url.searchParams.set("fromUpdatedDate", isoDay(from))
            url.searchParams.set("toUpdatedDate", isoDay(to))
            url.searchParams.set("size", String(size))
            url.searchParams.set("page", String(n))
            const got = yield* fetchPage({
              url: url.toString(),
              contentTypes: ["application/json"],
              deadline: run.deadline,
              attempts: options.attempts,
              backoffBaseMs: options.backoffBaseMs
            }, options)
            const body = got.json as { items?: unknown; total?: unknown } | null
            if (body === null || typeof body !== "object" || !Array.isArray(body.items)) {
              return yield* refused("Corrupt", `${got.url}: the page has no items list`)
            }
            return { got, items: body.items.length, total: typeof body.total === "number" ? body.total : 0 }
          })

        /** Pages one window of days whole (halving it first when it holds more than can be paged). */
        const window = (
          from: number,
          to: number
        ): Effect.Effect<void, FeedRefused, HttpClient.HttpClient | VulnStore> =>
          Effect.gen(function*() {
            let n = 0
            let first = yield* page(from, to, 0)
            if (first.total > MAX_HITS && to > from) {
              const mid = from + Math.floor((to - from) / DAY / 2) * DAY
              yield* window(from, mid)
              return yield* window(mid + DAY, to)
            }
            let seen = 0
            while (true) {
              if (first.items > 0) yield* run.store(`euvd-${isoDay(from)}-${isoDay(to)}-${n}.json`, first.got.bytes)
              seen += first.items
              if (first.items < size || seen >= first.total) return
              first = yield* page(from, to, ++n)
            }
          })

        const today = Math.floor(run.started / DAY) * DAY
        // The watermark is a day already stored up to its end, except the last: re-read from it, unchanged records cost nothing.
        let from = run.cursor.watermark === undefined ? EPOCH : Math.floor(Date.parse(run.cursor.watermark) / DAY) * DAY
        while (from <= today) {
          const to = Math.min(from + (WINDOW_DAYS - 1) * DAY, today)
          yield* window(from, to)
          yield* run.advance({ watermark: new Date(to).toISOString() })
          from = to + DAY
        }
        return { cursor: { watermark: new Date(today).toISOString() }, url: base }
      })
  )
