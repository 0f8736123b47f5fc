import { Clock, Config, Effect, type Scope, Stream } from "effect"
import { HttpClient } from "effect/http"
import { FileUnreadable } from "../ingest/FileBytes.ts"
import type { VulnStore } from "../vulns/VulnStore.ts"
import { guardBody } from "./BodyGuard.ts"
import { DEFAULT_LIMITS, recordFailure, type SyncOptions, type SyncOutcome } from "./CatalogueSync.ts"
import { beginRun, type FeedCursors } from "./FeedCursors.ts"
import { type FeedRefused, refused } from "./FeedError.ts"
import { INDEX_BYTES } from "./FeedJson.ts"
import { feedUrl } from "./FeedUrl.ts"
import { politeFetch } from "./PoliteFetch.ts"
import { storeFiles } from "./StoreFiles.ts"
import { ingestZip } from "./ZipFeed.ts"

/**
 * OSV's public bucket (https://google.github.io/osv.dev/data/#data-dumps):
 * per ecosystem `<ecosystem>/all.zip` (one `<ID>.json` per record),
 * `<ecosystem>/modified_id.csv` (`<modified ISO 8601>,<ID>` lines, newest
 * first) and `<ecosystem>/<ID>.json`.
 */
export const OSV_BUCKET = "https://osv-vulnerabilities.storage.googleapis.com"
/** Package ecosystems by default; `VDB_OSV_ECOSYSTEMS` (comma-separated, OSV's spelling) chooses others. */
export const DEFAULT_ECOSYSTEMS = [
  "PyPI",
  "npm",
  "Go",
  "Maven",
  "crates.io",
  "RubyGems",
  "NuGet",
  "Packagist",
  "Hex",
  "Pub"
]
const HOUR = 60 * 60 * 1000
/** Names that go into a URL path: OSV's ecosystems (`Rocky Linux`, `Debian:12`) and ids (`PYSEC-2021-66`). */
const ECOSYSTEM = /^[A-Za-z0-9][A-Za-z0-9 .:_-]{0,63}$/
const ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/
const CSV_TYPES = ["text/csv", "text/plain", "application/octet-stream"]
const JSON_TYPES = ["application/json", "text/plain", "application/octet-stream"]

const ecosystemsConfig = Config.String("VDB_OSV_ECOSYSTEMS").pipe(
  Config.map((s) => s.split(",").map((e) => e.trim()).filter((e) => e !== "")),
  Config.withDefault(DEFAULT_ECOSYSTEMS)
)

/**
 * The changes of `modified_id.csv` newer than `since` (all when undefined),
 * read line by line and stopped at the first line not newer: the file is
 * newest first, so a run with little new reads little of it. A line that
 * does not read is counted and passed over. Asked conditionally with the
 * ETag of the list last read through (the bucket serves one): a 304 is
 * nothing new, and the list (megabytes for the large ecosystems) is not
 * sent again.
 */
const changesSince = Effect.fnUntraced(
  function*(
    url: string,
    since: number | undefined,
    etag: string | undefined,
    plan: { deadline: number; attempts?: number | undefined; backoffBaseMs?: number | undefined }
  ) {
    const fetched = yield* politeFetch({ url, etag, contentTypes: CSV_TYPES, ...plan })
    if (fetched._tag === "NotModified") return { ids: [], newest: undefined, bad: 0, etag }
    const limits = { maxBytes: INDEX_BYTES, maxInflatedBytes: INDEX_BYTES, maxRatio: 1 }
    const ids: Array<string> = []
    let newest: string | undefined
    let bad = 0
    let rest = ""
    let done = false
    const line = (text: string) => {
      const [modified, id] = text.trim().split(",")
      if (modified === undefined || modified === "") return
      const at = Date.parse(modified)
      if (Number.isNaN(at) || id === undefined || !ID.test(id)) return void bad++
      if (since !== undefined && at <= since) return void (done = true)
      newest ??= modified
      ids.push(id)
    }
    yield* guardBody(fetched.body, limits, fetched.contentLength).pipe(
      Stream.takeWhile(() => !done),
      Stream.runForEach((chunk) =>
        Effect.sync(() => {
          const lines = (rest + Buffer.from(chunk).toString("utf8")).split("\n")
          rest = lines.pop() ?? ""
          for (const l of lines) if (!done) line(l)
        })
      )
    )
    if (!done && rest !== "") line(rest)
    return { ids, newest, bad, etag: fetched.etag }
  },
  Effect.scoped
)

/**
 * One run over the configured ecosystems, each on its own position (the
 * newest `modified` of its `modified_id.csv` at its last completed pass).
 * An ecosystem without one is loaded from `all.zip` (its change list read
 * first, so a change made during the download is fetched again next time,
 * never lost); one with a position fetches only the `<ID>.json` of the lines
 * newer than it. Each ecosystem's position moves once its records are stored.
 */
export const syncOsv = Effect.fn("Feeds.syncOsv")(function*(options: SyncOptions = {}) {
  const source = "osv" as const
  const { cursors, deadline, cursor, failures } = yield* beginRun(source, options, 2 * HOUR)
  const base = (yield* feedUrl(source, OSV_BUCKET).pipe(Effect.orDie)).replace(/\/+$/, "")
  const ecosystems = yield* ecosystemsConfig.pipe(Effect.orDie)
  const plan = { deadline, attempts: options.attempts, backoffBaseMs: options.backoffBaseMs }
  const positions: Record<string, string> = { ...cursor.positions }
  const etags: Record<string, string> = { ...cursor.etags }
  let changed = 0
  let failed = 0

  const run = Effect.gen(function*() {
    for (const ecosystem of ecosystems) {
      if (!ECOSYSTEM.test(ecosystem)) {
        return yield* refused("HttpStatus", `"${ecosystem.slice(0, 64)}" is not an OSV ecosystem name`)
      }
      const folder = `${base}/${encodeURIComponent(ecosystem)}`
      const position = positions[ecosystem]
      const since = position === undefined ? undefined : Date.parse(position)
      // A list's ETag counts only with the position it was read to (an ecosystem loaded again from all.zip has none).
      const changes = yield* changesSince(
        `${folder}/modified_id.csv`,
        since,
        position === undefined ? undefined : etags[ecosystem],
        plan
      )
      failed += changes.bad
      if (position === undefined) {
        const stored = yield* ingestZip({
          source,
          url: `${folder}/all.zip`,
          accept: (name) => name.endsWith(".json"),
          ...plan,
          limits: options.limits === undefined
            ? undefined
            : { ...options.limits, maxEntryBytes: options.limits.maxInflatedBytes },
          ingest: options.ingest
        })
        changed += stored.changed
        failed += stored.failed
      } else if (changes.ids.length > 0) {
        const limits = options.limits ?? DEFAULT_LIMITS
        const client = yield* HttpClient.HttpClient
        const open = (n: number): Stream.Stream<Uint8Array, FeedRefused | FileUnreadable> =>
          Stream.unwrap(
            Effect.gen(
              function*(): Effect.fn.Return<
                Stream.Stream<Uint8Array, FeedRefused | FileUnreadable>,
                FeedRefused,
                HttpClient.HttpClient | Scope.Scope
              > {
                const fetched = yield* politeFetch({
                  url: `${folder}/${encodeURIComponent(changes.ids[n]!)}.json`,
                  contentTypes: JSON_TYPES,
                  ...plan
                }).pipe(
                  Effect.catchIf((e) => e.kind === "HttpStatus" && / 404$/.test(e.detail), () =>
                    Effect.succeed(undefined))
                )
                // Withdrawn from the bucket between the list and the fetch: a failed record, not a failed run.
                if (fetched === undefined || fetched._tag === "NotModified") {
                  return Stream.fail(new FileUnreadable({ reason: "the record is no longer published" }))
                }
                return guardBody(fetched.body, limits, fetched.contentLength)
              }
            )
          ).pipe(Stream.scoped, Stream.provideService(HttpClient.HttpClient, client))
        const stored = yield* storeFiles(source, changes.ids.map((id) => `${ecosystem}/${id}.json`), open, {
          ingest: options.ingest
        })
        changed += stored.changed
        failed += stored.failed
        if (stored.refusal !== undefined) return yield* stored.refusal
      }
      if (changes.newest !== undefined) positions[ecosystem] = changes.newest
      else if (position === undefined) positions[ecosystem] = new Date(0).toISOString()
      if (changes.etag !== undefined) etags[ecosystem] = changes.etag
      else delete etags[ecosystem]
      const now = yield* Clock.currentTimeMillis
      yield* cursors.succeeded(source, {
        cursor: { positions: { ...positions }, etags: { ...etags } },
        fetched: { url: folder, etag: undefined, at: new Date(now) },
        changed,
        failed,
        nextRunAt: new Date(now + HOUR)
      })
    }
    const nextRunAt = new Date((yield* Clock.currentTimeMillis) + HOUR)
    return { source, status: changed > 0 ? "updated" : "unchanged", changed, failed, nextRunAt } satisfies SyncOutcome
  })

  return yield* run.pipe(
    Effect.catch((error: FeedRefused) => recordFailure(source, failures, error, changed, failed))
  )
}) as (options?: SyncOptions) => Effect.Effect<SyncOutcome, never, FeedCursors | VulnStore | HttpClient.HttpClient>
