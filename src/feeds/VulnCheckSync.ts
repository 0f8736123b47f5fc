import { Config, Effect, Option, Redacted } from "effect"
import type { HttpClient } from "effect/http"
import type { VulnStore } from "../vulns/VulnStore.ts"
import type { SyncOptions, SyncOutcome } from "./CatalogueSync.ts"
import type { FeedCursors } from "./FeedCursors.ts"
import { refused } from "./FeedError.ts"
import { feedUrl } from "./FeedUrl.ts"
import { fetchPage, isoDay, runPaged } from "./PagedFeed.ts"

/**
 * VulnCheck's index API (`GET /v3/index/{index}`, the OpenAPI description of
 * vulncheck-oss/sdk-python; https://docs.vulncheck.com): a token as
 * `Authorization: Bearer`, server-side cursor paging (`start_cursor=true`,
 * then `cursor=<_meta.next_cursor>` until it is empty), at most 100 records a
 * page, and `lastModStartDate` (a day) for what changed since.
 */
export const VULNCHECK_FEEDS = [
  { source: "vulncheck-kev", url: "https://api.vulncheck.com/v3/index/vulncheck-kev" },
  { source: "vulncheck-nvd", url: "https://api.vulncheck.com/v3/index/vulncheck-nvd2" }
] as const
export type VulnCheckSource = typeof VULNCHECK_FEEDS[number]["source"]

const LIMIT = 100
const HOUR = 60 * 60 * 1000

export interface VulnCheckOptions extends SyncOptions {
  readonly pageSize?: number | undefined
}

/** The token, when one is configured: without it the VulnCheck feeds do not run (nor say anything). */
export const vulnCheckToken = Config.option(Config.Redacted("VDB_VULNCHECK_TOKEN")).pipe(Effect.orDie)

/**
 * One run of a VulnCheck index. KEV is a few thousand entries: fetched whole
 * each run. NVD++ asks from the day of the last complete run
 * (`lastModStartDate`); the server-side cursor cannot be resumed by another
 * process, so the watermark moves once the last page is stored.
 */
export const syncVulnCheck = (
  source: VulnCheckSource,
  options: VulnCheckOptions = {}
): Effect.Effect<SyncOutcome | undefined, never, FeedCursors | VulnStore | HttpClient.HttpClient> =>
  Effect.gen(function*() {
    const token = yield* vulnCheckToken
    if (Option.isNone(token)) return undefined
    const feed = VULNCHECK_FEEDS.find((f) => f.source === source)!
    const secretHeaders = { authorization: Redacted.make(`Bearer ${Redacted.value(token.value)}`) }
    return yield* runPaged(
      { source, intervalMs: source === "vulncheck-kev" ? 6 * HOUR : HOUR, timeoutMs: 6 * HOUR },
      options,
      (run) =>
        Effect.gen(function*() {
          const base = yield* feedUrl(source, feed.url).pipe(Effect.orDie)
          const limit = String(Math.min(LIMIT, options.pageSize ?? LIMIT))
          const first = new URL(base)
          first.searchParams.set("start_cursor", "true")
          first.searchParams.set("limit", limit)
          if (source === "vulncheck-nvd" && run.cursor.watermark !== undefined) {
            first.searchParams.set("lastModStartDate", isoDay(Date.parse(run.cursor.watermark)))
          }
          let url: string | undefined = first.toString()
          let n = 0
          while (url !== undefined) {
            const page = yield* fetchPage({
              url,
              secretHeaders,
              contentTypes: ["application/json"],
              deadline: run.deadline,
              attempts: options.attempts,
              backoffBaseMs: options.backoffBaseMs
            }, options)
            const body = page.json as { data?: unknown; _meta?: { next_cursor?: unknown } } | null
            if (body === null || typeof body !== "object" || !Array.isArray(body.data)) {
              return yield* refused("Corrupt", `${page.url}: the page has no data list`)
            }
            if (body.data.length > 0) yield* run.store(`${source}-${n}.json`, page.bytes)
            n++
            const next = body._meta?.next_cursor
            if (typeof next !== "string" || next === "" || body.data.length === 0) url = undefined
            else {
              const u = new URL(base)
              u.searchParams.set("cursor", next)
              u.searchParams.set("limit", limit)
              url = u.toString()
            }
          }
          return { cursor: { watermark: new Date(run.started).toISOString() }, url: base }
        })
    )
  })
