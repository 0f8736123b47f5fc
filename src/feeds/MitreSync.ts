import { Clock, Effect } from "effect"
import type { HttpClient } from "effect/http"
import type { VulnStore } from "../vulns/VulnStore.ts"
import { recordFailure, type SyncOptions, type SyncOutcome } from "./CatalogueSync.ts"
import { beginRun, type Cursor, type FeedCursors } from "./FeedCursors.ts"
import { type FeedRefused, refused } from "./FeedError.ts"
import { fetchJson, githubAuth, type JsonFetched } from "./FeedJson.ts"
import { feedUrl } from "./FeedUrl.ts"
import { ingestZip, type ZipRun } from "./ZipFeed.ts"

/**
 * The CVE List V5 (https://github.com/CVEProject/cvelistV5, "Releases"):
 * every hourly release `cve_YYYY-MM-DD_HHMMZ` carries the day's baseline
 * `YYYY-MM-DD_all_CVEs_at_midnight.zip.zip` (a zip holding `cves.zip`, which
 * holds `cves/<year>/<n>xxx/CVE-….json`) and `YYYY-MM-DD_delta_CVEs_at_HHMMZ.zip`
 * (`deltaCves/CVE-….json`: every record changed since that day's midnight,
 * cumulative); after midnight a release `cve_YYYY-MM-DD_at_end_of_day` carries
 * `YYYY-MM-DD_delta_CVEs_at_end_of_day.zip`, the whole day's changes.
 * Listed through GitHub's REST API (`GET /repos/{owner}/{repo}/releases`).
 */
export const CVELIST_RELEASES = "https://api.github.com/repos/CVEProject/cvelistV5/releases"
const HOUR = 60 * 60 * 1000
const DAY = 24 * HOUR
/** Release pages read looking for the cursor's delta: 100 releases a page is about four days of hourly releases. */
const MAX_PAGES = 10

const BASELINE = /^(\d{4}-\d{2}-\d{2})_all_CVEs_at_midnight\.zip(?:\.zip)?$/
const DELTA = /^(\d{4}-\d{2}-\d{2})_delta_CVEs_at_(\d{4}Z|end_of_day)\.zip$/
const RECORD = /(?:^|\/)CVE-\d{4}-\d{4,}\.json$/

interface Asset {
  readonly name: string
  readonly url: string
  /** `YYYY-MM-DD HHMM`: a delta's day and time (end of day is 2400), a baseline's day at 0000; ordered as text. */
  readonly key: string
  readonly day: string
  readonly baseline: boolean
}

/** An asset of a release as GitHub lists it; anything unrecognised is passed over. */
export const assetOf = (name: string, url: string): Asset | undefined => {
  const base = BASELINE.exec(name)
  if (base !== null) return { name, url, key: `${base[1]} 0000`, day: base[1]!, baseline: true }
  const delta = DELTA.exec(name)
  if (delta === null) return undefined
  const time = delta[2] === "end_of_day" ? "2400" : delta[2]!.slice(0, 4)
  return { name, url, key: `${delta[1]} ${time}`, day: delta[1]!, baseline: false }
}

const assetsIn = (value: unknown): Array<Asset> => {
  if (!Array.isArray(value)) return []
  const assets: Array<Asset> = []
  for (const release of value as Array<unknown>) {
    const list = (release as { assets?: unknown } | null)?.assets
    if (!Array.isArray(list)) continue
    for (const a of list as Array<{ name?: unknown; browser_download_url?: unknown } | null>) {
      if (typeof a?.name !== "string" || typeof a.browser_download_url !== "string") continue
      const asset = assetOf(a.name, a.browser_download_url)
      if (asset !== undefined) assets.push(asset)
    }
  }
  return assets
}

/**
 * The deltas that bring a copy at `from` (a key) up to date: for each day
 * from `from`'s on, the newest delta of that day (they are cumulative since
 * midnight). A past day is closed only by its end-of-day delta: when the
 * newest listed day is the next one and that delta is not out yet, the plan
 * stops at the day's newest hourly delta (`waiting`), so a change made late
 * in the day is not skipped by moving on to the next day.
 */
export const deltasAfter = (assets: ReadonlyArray<Asset>, from: string) => {
  const byDay = new Map<string, Asset>()
  for (const a of assets) {
    if (a.baseline || a.key <= from) continue
    const held = byDay.get(a.day)
    if (held === undefined || a.key > held.key) byDay.set(a.day, a)
  }
  const days = [...byDay.keys()].sort()
  const newest = days.at(-1)
  const plan: Array<Asset> = []
  for (const day of days) {
    const delta = byDay.get(day)!
    plan.push(delta)
    const nextDay = new Date(Date.parse(`${day}T00:00:00Z`) + DAY).toISOString().slice(0, 10)
    if (day !== newest && !delta.key.endsWith("2400") && nextDay === newest) return { plan, waiting: true }
  }
  return { plan, waiting: false }
}

/**
 * One run. Without a cursor (or when the releases listed no longer reach
 * back to it) the newest baseline is stored first; then the deltas after the
 * cursor. The cursor (`lastDelta`: the archive's name) moves after each
 * archive is wholly stored, so a run killed in the middle repeats at most
 * one archive (its records come back unchanged). The listing's ETag is kept
 * only once the copy is level with it: a 304 then means nothing new.
 */
export const syncMitre = Effect.fn("Feeds.syncMitre")(function*(options: SyncOptions = {}) {
  const source = "mitre" as const
  const { cursors, deadline, cursor, failures } = yield* beginRun(source, options, 2 * HOUR)
  const listing = yield* feedUrl(source, CVELIST_RELEASES).pipe(Effect.orDie)
  const auth = yield* githubAuth
  let changed = 0
  let failed = 0

  const run = Effect.gen(function*() {
    const from = cursor.lastDelta === undefined ? undefined : assetOf(cursor.lastDelta, "")?.key
    const assets: Array<Asset> = []
    let etag: string | undefined
    let reached = false
    let url: string | undefined = `${listing}${listing.includes("?") ? "&" : "?"}per_page=100`
    for (let page = 0; url !== undefined && page < MAX_PAGES && !reached; page++) {
      const fetched: JsonFetched = yield* fetchJson({
        url,
        etag: page === 0 && from !== undefined ? cursor.etag : undefined,
        deadline,
        attempts: options.attempts,
        backoffBaseMs: options.backoffBaseMs,
        ...auth
      })
      if (fetched._tag === "NotModified") {
        const nextRunAt = new Date((yield* Clock.currentTimeMillis) + HOUR)
        yield* cursors.succeeded(source, { cursor, changed: 0, failed: 0, nextRunAt })
        return { source, status: "unchanged", changed: 0, failed: 0, nextRunAt } satisfies SyncOutcome
      }
      if (!Array.isArray(fetched.value)) return yield* refused("Corrupt", `${fetched.url} is not a list of releases`)
      if (page === 0) etag = fetched.etag
      const found = assetsIn(fetched.value)
      assets.push(...found)
      reached = from !== undefined && found.some((a) => a.key <= from)
      url = fetched.next
    }

    const zip = (asset: Asset): ZipRun => ({
      source,
      url: asset.url,
      accept: (name) => RECORD.test(name),
      inner: asset.baseline ? "cves.zip" : undefined,
      deadline,
      attempts: options.attempts,
      backoffBaseMs: options.backoffBaseMs,
      limits: options.limits === undefined
        ? undefined
        : { ...options.limits, maxEntryBytes: options.limits.maxInflatedBytes },
      ingest: options.ingest
    })
    const store = Effect.fnUntraced(function*(asset: Asset, position: Cursor) {
      const stored = yield* ingestZip(zip(asset))
      changed += stored.changed
      failed += stored.failed
      const now = yield* Clock.currentTimeMillis
      yield* cursors.succeeded(source, {
        cursor: position,
        fetched: { url: stored.url, etag: stored.etag, at: new Date(now) },
        changed,
        failed,
        nextRunAt: new Date(now + HOUR)
      })
    })

    let position = from
    if (position === undefined || !reached) {
      const baseline = assets.filter((a) => a.baseline).sort((a, b) => a.key < b.key ? 1 : -1)[0]
      if (baseline === undefined) {
        return yield* refused("Corrupt", "the release list names no baseline archive (…_all_CVEs_at_midnight.zip)")
      }
      yield* store(baseline, { lastDelta: baseline.name })
      position = baseline.key
    }
    const { plan, waiting } = deltasAfter(assets, position)
    for (const [n, delta] of plan.entries()) {
      const level = n === plan.length - 1 && !waiting
      yield* store(delta, level ? { lastDelta: delta.name, etag } : { lastDelta: delta.name })
    }
    const now = yield* Clock.currentTimeMillis
    const nextRunAt = new Date(now + HOUR)
    if (plan.length === 0) {
      yield* cursors.succeeded(source, {
        cursor: { ...(yield* cursors.get(source))?.cursor, etag },
        changed,
        failed,
        nextRunAt
      })
    }
    return {
      source,
      status: changed > 0 || plan.length > 0 ? "updated" : "unchanged",
      changed,
      failed,
      nextRunAt
    } satisfies SyncOutcome
  })

  return yield* run.pipe(
    Effect.catch((error: FeedRefused) => recordFailure(source, failures, error, changed, failed))
  )
}) as (options?: SyncOptions) => Effect.Effect<SyncOutcome, never, FeedCursors | VulnStore | HttpClient.HttpClient>
