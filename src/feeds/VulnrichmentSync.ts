import { Clock, Effect, type Scope, Stream } from "effect"
import { HttpClient } from "effect/http"
import type { FileUnreadable } from "../ingest/FileBytes.ts"
import type { VulnStore } from "../vulns/VulnStore.ts"
import { guardBody } from "./BodyGuard.ts"
import { DEFAULT_LIMITS, recordFailure, type SyncOptions, type SyncOutcome } from "./CatalogueSync.ts"
import { beginRun, type Cursor, type FeedCursors } from "./FeedCursors.ts"
import { type FeedRefused, refused } from "./FeedError.ts"
import { fetchJson, githubAuth } from "./FeedJson.ts"
import { feedUrl } from "./FeedUrl.ts"
import { politeFetch } from "./PoliteFetch.ts"
import { storeFiles } from "./StoreFiles.ts"
import { ingestZip } from "./ZipFeed.ts"

/**
 * CISA's vulnrichment repository (https://github.com/cisagov/vulnrichment,
 * branch `develop`: `<year>/<n>xxx/CVE-….json`, CVE records with CISA's ADP
 * container), through GitHub's REST API: the branch's head commit
 * (`GET /repos/{owner}/{repo}/commits/{ref}`, conditional on its ETag), the
 * repository's archive at a commit (`GET …/zipball/{ref}`, a redirect to
 * codeload) and the files changed between two commits
 * (`GET …/compare/{base}...{head}`, at most 300 files listed).
 */
export const VULNRICHMENT_API = "https://api.github.com/repos/cisagov/vulnrichment"
const BRANCH = "develop"
const HOUR = 60 * 60 * 1000
/** GitHub's compare lists at most 300 files; a comparison that long may be cut, so the archive is read instead. */
const COMPARE_MAX_FILES = 300
const RECORD = /(?:^|\/)CVE-\d{4}-\d{4,}\.json$/
const SHA = /^[0-9a-f]{40}$/
const RAW_TYPES = ["text/plain", "application/json", "application/octet-stream"]

interface Changed {
  readonly filename: string
  readonly status: string
  readonly raw_url: string
}

const changedIn = (value: unknown): { ahead: boolean; files: Array<Changed> } | undefined => {
  const doc = value as { status?: unknown; files?: unknown } | null
  if (typeof doc !== "object" || doc === null || !Array.isArray(doc.files)) return undefined
  const files = (doc.files as Array<Partial<Changed> | null>).filter((f): f is Changed =>
    typeof f?.filename === "string" && typeof f.status === "string" && typeof f.raw_url === "string"
  )
  return { ahead: doc.status === "ahead", files }
}

/**
 * One run. The first (or `--full`, or when the history cannot be compared:
 * a force-push, more than 300 files) reads the archive of the head commit;
 * later runs fetch only the record files the comparison from the last
 * applied commit lists as added or modified. The cursor (`lastDelta`: that
 * commit's sha, and the head's ETag) moves once they are all stored.
 */
export const syncVulnrichment = Effect.fn("Feeds.syncVulnrichment")(function*(options: SyncOptions = {}) {
  const source = "vulnrichment" as const
  const { cursors, deadline, cursor, failures } = yield* beginRun(source, options, HOUR)
  const api = (yield* feedUrl(source, VULNRICHMENT_API).pipe(Effect.orDie)).replace(/\/+$/, "")
  const auth = yield* githubAuth
  const plan = { deadline, attempts: options.attempts, backoffBaseMs: options.backoffBaseMs }
  let changed = 0
  let failed = 0

  const run = Effect.gen(function*() {
    const head = yield* fetchJson({
      url: `${api}/commits/${BRANCH}`,
      etag: cursor.lastDelta === undefined ? undefined : cursor.etag,
      ...plan,
      ...auth
    })
    const done = Effect.fnUntraced(function*(next: Cursor, fetched?: { url: string; etag: string | undefined }) {
      const now = yield* Clock.currentTimeMillis
      const nextRunAt = new Date(now + HOUR)
      yield* cursors.succeeded(source, {
        cursor: next,
        fetched: fetched && { ...fetched, at: new Date(now) },
        changed,
        failed,
        nextRunAt
      })
      return { source, status: changed > 0 ? "updated" : "unchanged", changed, failed, nextRunAt } satisfies SyncOutcome
    })
    if (head._tag === "NotModified") return yield* done(cursor)
    const sha = (head.value as { sha?: unknown } | null)?.sha
    if (typeof sha !== "string" || !SHA.test(sha)) return yield* refused("Corrupt", `${head.url} names no commit`)
    const next: Cursor = { lastDelta: sha, etag: head.etag }
    if (cursor.lastDelta === sha) return yield* done(next)

    let files: Array<Changed> | undefined
    if (cursor.lastDelta !== undefined && SHA.test(cursor.lastDelta)) {
      // A base GitHub no longer knows (a force-push) answers 404: the archive is read instead.
      const compared = yield* fetchJson({ url: `${api}/compare/${cursor.lastDelta}...${sha}`, ...plan, ...auth }).pipe(
        Effect.catchIf((e) => e.kind === "HttpStatus", () => Effect.succeed(undefined))
      )
      const found = compared?._tag === "Json" ? changedIn(compared.value) : undefined
      if (found !== undefined && found.ahead && found.files.length < COMPARE_MAX_FILES) files = found.files
    }
    if (files === undefined) {
      const stored = yield* ingestZip({
        source,
        url: `${api}/zipball/${sha}`,
        accept: (name) => RECORD.test(name),
        ...plan,
        limits: options.limits === undefined
          ? undefined
          : { ...options.limits, maxEntryBytes: options.limits.maxInflatedBytes },
        ingest: options.ingest
      })
      changed += stored.changed
      failed += stored.failed
      return yield* done(next, stored)
    }
    const records = files.filter((f) => f.status !== "removed" && RECORD.test(f.filename))
    const client = yield* HttpClient.HttpClient
    const limits = options.limits ?? DEFAULT_LIMITS
    const open = (n: number): Stream.Stream<Uint8Array, FeedRefused | FileUnreadable> =>
      Stream.unwrap(
        Effect.gen(
          function*(): Effect.fn.Return<
            Stream.Stream<Uint8Array, FeedRefused>,
            FeedRefused,
            HttpClient.HttpClient | Scope.Scope
          > {
            // The raw file at the compared commit (no token: it is a public download host, not the API).
            const fetched = yield* politeFetch({ url: records[n]!.raw_url, contentTypes: RAW_TYPES, ...plan })
            if (fetched._tag === "NotModified") {
              return Stream.fail(refused("HttpStatus", "a raw file answered 304 to an unconditional request"))
            }
            return guardBody(fetched.body, limits, fetched.contentLength)
          }
        )
      ).pipe(Stream.scoped, Stream.provideService(HttpClient.HttpClient, client))
    const stored = yield* storeFiles(source, records.map((f) => f.filename), open, { ingest: options.ingest })
    changed += stored.changed
    failed += stored.failed
    if (stored.refusal !== undefined) return yield* stored.refusal
    return yield* done(next, { url: `${api}/compare/${cursor.lastDelta}...${sha}`, etag: undefined })
  })

  return yield* run.pipe(
    Effect.catch((error: FeedRefused) => recordFailure(source, failures, error, changed, failed))
  )
}) as (options?: SyncOptions) => Effect.Effect<SyncOutcome, never, FeedCursors | VulnStore | HttpClient.HttpClient>
