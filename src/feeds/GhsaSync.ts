import { Config, Effect, Option, Redacted } from "effect"
import type { HttpClient } from "effect/http"
import type { VulnStore } from "../vulns/VulnStore.ts"
import { retryAfterAt } from "./Backoff.ts"
import type { SyncOptions, SyncOutcome } from "./CatalogueSync.ts"
import type { FeedCursors } from "./FeedCursors.ts"
import { refused } from "./FeedError.ts"
import { feedUrl } from "./FeedUrl.ts"
import { advisoryToOsv } from "./GhsaAdvisory.ts"
import { fetchPage, runPaged, waitUntil } from "./PagedFeed.ts"

/**
 * GitHub's global security advisories (REST, `GET /advisories`):
 * https://docs.github.com/en/rest/security-advisories/global-advisories.
 * Pages of at most 100 by the cursor in the `Link` header
 * (https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api),
 * oldest update first, from the stored watermark (`modified=>=…`). The
 * default type is GitHub-reviewed advisories, the set github/advisory-database
 * publishes under `advisories/github-reviewed`.
 */
export const GHSA_URL = "https://api.github.com/advisories"
const PER_PAGE = 100
const HOUR = 60 * 60 * 1000
/** The REST API version these requests are written against. */
const API_VERSION = "2022-11-28"

export interface GhsaOptions extends SyncOptions {
  /** Advisories a page (GitHub's maximum by default; tests page smaller). */
  readonly pageSize?: number | undefined
}

/** The `rel="next"` target of a `Link` header. */
export const nextLink = (link: string | undefined): string | undefined => {
  for (const part of (link ?? "").split(",")) {
    const m = /<([^>]+)>\s*;\s*rel="?([^";]+)"?/.exec(part.trim())
    if (m !== null && m[2]!.split(/\s+/).includes("next")) return m[1]
  }
  return undefined
}

/**
 * GitHub's rate-limit answers (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api):
 * a 403 or 429 with `retry-after` is waited that long; with
 * `x-ratelimit-remaining: 0` until `x-ratelimit-reset` (epoch seconds); any
 * other 403 is a refusal, not a limit.
 */
export const githubRateLimit = (status: number, headers: Readonly<Record<string, string | undefined>>, now: number) => {
  if (status !== 403 && status !== 429) return undefined
  const asked = retryAfterAt(headers["retry-after"], now)
  if (asked !== undefined) return asked
  const reset = headers["x-ratelimit-reset"]
  if (headers["x-ratelimit-remaining"] === "0" && reset !== undefined && /^\d{1,12}$/.test(reset.trim())) {
    return Math.max(now, Number(reset) * 1000)
  }
  return status === 429 ? now + 60_000 : undefined
}

/** The headers of every GitHub API request: its media type and version, and the token when there is one. */
export const githubRequest = Effect.fnUntraced(function*(accept: string = "application/vnd.github+json") {
  const token = yield* Config.option(Config.Redacted("VDB_GITHUB_TOKEN")).pipe(Effect.orDie)
  const secretHeaders: Record<string, Redacted.Redacted<string>> = {}
  if (Option.isSome(token)) secretHeaders.authorization = Redacted.make(`Bearer ${Redacted.value(token.value)}`)
  return {
    headers: { accept, "x-github-api-version": API_VERSION },
    secretHeaders,
    rateLimitedUntil: githubRateLimit
  }
})

/** `modified` in GitHub's search-syntax form, from the watermark on. */
const since = (watermark: string) => `>=${new Date(watermark).toISOString().replace(/\.\d{3}Z$/, "+00:00")}`

export const syncGhsa = (
  options: GhsaOptions = {}
): Effect.Effect<SyncOutcome, never, FeedCursors | VulnStore | HttpClient.HttpClient> =>
  runPaged({ source: "ghsa", intervalMs: HOUR, timeoutMs: 2 * HOUR }, options, (run) =>
    Effect.gen(function*() {
      const base = yield* feedUrl("ghsa", GHSA_URL).pipe(Effect.orDie)
      const request = yield* githubRequest()
      const first = new URL(base)
      first.searchParams.set("per_page", String(Math.min(PER_PAGE, options.pageSize ?? PER_PAGE)))
      first.searchParams.set("sort", "updated")
      first.searchParams.set("direction", "asc")
      if (run.cursor.watermark !== undefined) first.searchParams.set("modified", since(run.cursor.watermark))
      let url: string | undefined = first.toString()
      let watermark = run.cursor.watermark
      let pageNo = 0
      while (url !== undefined) {
        const page = yield* fetchPage({
          ...request,
          url,
          contentTypes: ["application/json"],
          deadline: run.deadline,
          attempts: options.attempts,
          backoffBaseMs: options.backoffBaseMs
        }, options)
        if (!Array.isArray(page.json)) {
          return yield* refused("Corrupt", `${page.url}: the page is not a list of advisories`)
        }
        const advisories: ReadonlyArray<unknown> = page.json
        if (advisories.length > 0) {
          yield* run.store(`ghsa-advisories-${pageNo}.json`, Buffer.from(JSON.stringify(advisories.map(advisoryToOsv))))
          // Oldest update first: once the page is stored, nothing older than its newest is left to fetch.
          for (const a of advisories) {
            const updated = (a as { updated_at?: unknown } | null)?.updated_at
            if (
              typeof updated === "string" && !Number.isNaN(Date.parse(updated)) &&
              (watermark === undefined || Date.parse(updated) > Date.parse(watermark))
            ) {
              watermark = new Date(updated).toISOString()
            }
          }
          yield* run.advance({ watermark })
        }
        pageNo++
        url = nextLink(page.headers.link)
        // The token goes with every page: a next page is fetched only from the API's own origin.
        if (url !== undefined && new URL(url, base).origin !== new URL(base).origin) {
          return yield* refused("InsecureRedirect", `${page.url}: the next page's link leaves ${new URL(base).origin}`)
        }
        // The last request of the hour's allowance: wait for its reset rather than be refused.
        if (url !== undefined && page.headers["x-ratelimit-remaining"] === "0") {
          const reset = Number(page.headers["x-ratelimit-reset"] ?? "0") * 1000
          yield* waitUntil(reset, run.deadline, "GitHub's hourly request allowance is spent")
        }
      }
      return { cursor: { watermark }, url: base }
    }))
