import { Effect } from "effect"
import type { HttpClient } from "effect/http"
import { join } from "node:path"
import type { VulnStore } from "../vulns/VulnStore.ts"
import { guardBody } from "./BodyGuard.ts"
import { DEFAULT_LIMITS, type SyncOptions, type SyncOutcome } from "./CatalogueSync.ts"
import type { FeedCursors } from "./FeedCursors.ts"
import { refused } from "./FeedError.ts"
import { feedUrl } from "./FeedUrl.ts"
import { githubRequest } from "./GhsaSync.ts"
import { fetchBytes, runPaged } from "./PagedFeed.ts"
import { politeFetch } from "./PoliteFetch.ts"
import { download, listEntries, openEntries, tempFolder, type ZipLimits } from "./ZipArchive.ts"

/**
 * nomi-sec/PoC-in-GitHub: one JSON file per CVE (`<year>/CVE-….json`, a list
 * of GitHub repositories), rewritten by the publisher's crawler several times
 * a day. A run asks GitHub's REST API for the default branch's head commit
 * (https://docs.github.com/en/rest/commits/commits#get-a-commit, the `sha`
 * media type); when it is the commit stored last, nothing more is fetched.
 * Otherwise it downloads the archive of exactly that commit
 * (https://docs.github.com/en/rest/repos/contents#download-a-repository-archive-zip)
 * and reads every per-CVE file through the ingestion, where the files that
 * did not change cost one hash look-up. Every crawl rewrites star and fork
 * counts across most files, so a per-commit diff would list nearly the whole
 * tree anyway, in many more requests.
 */
export const POC_URL = "https://api.github.com/repos/nomi-sec/PoC-in-GitHub"
const BRANCH = "master"
const HOUR = 60 * 60 * 1000
/** The archive is about 100 MB unpacked today; room to grow, not to be bombed. */
const CAPS: ZipLimits = { maxEntryBytes: 16 * 1024 * 1024, maxInflatedBytes: 2 * 1024 * 1024 * 1024, maxRatio: 200 }
const CVE_FILE = /^[^/]+\/(\d{4})\/(CVE-\d{4}-\d{4,})\.json$/i

export const syncPocInGithub = (
  options: SyncOptions = {}
): Effect.Effect<SyncOutcome, never, FeedCursors | VulnStore | HttpClient.HttpClient> =>
  runPaged(
    { source: "poc-in-github", intervalMs: 6 * HOUR, timeoutMs: HOUR },
    options,
    (run) =>
      Effect.gen(function*() {
        const base = (yield* feedUrl("poc-in-github", POC_URL).pipe(Effect.orDie)).replace(/\/+$/, "")
        const fetchOptions = {
          deadline: run.deadline,
          attempts: options.attempts,
          backoffBaseMs: options.backoffBaseMs
        }
        const head = yield* fetchBytes({
          ...(yield* githubRequest("application/vnd.github.sha")),
          ...fetchOptions,
          url: `${base}/commits/${BRANCH}`,
          contentTypes: ["application/vnd.github.sha", "text/plain", "application/json"]
        }, options).pipe(Effect.map((p) => Buffer.from(p.bytes).toString("utf8").trim()))
        const sha = /^[0-9a-f]{40}$/.test(head) ? head : undefined
        if (sha === undefined) return yield* refused("Corrupt", `${base}/commits/${BRANCH} did not answer a commit id`)
        if (sha === run.cursor.lastDelta) return { cursor: run.cursor, url: `${base}/zipball/${sha}` }

        const archive = `${base}/zipball/${sha}`
        yield* Effect.scoped(Effect.gen(function*() {
          const fetched = yield* politeFetch({
            ...(yield* githubRequest()),
            ...fetchOptions,
            url: archive,
            contentTypes: ["application/zip", "application/x-zip-compressed", "application/octet-stream"]
          })
          if (fetched._tag === "NotModified") {
            return yield* refused("HttpStatus", `${archive} answered 304 to an unconditional request`)
          }
          const path = join(yield* tempFolder, "poc-in-github.zip")
          yield* download(guardBody(fetched.body, options.limits ?? DEFAULT_LIMITS, fetched.contentLength), path)
          const accept = (name: string) => CVE_FILE.test(name)
          const names = yield* listEntries(path, accept, CAPS)
          const { entry } = yield* openEntries(path, accept, CAPS)
          // An entry the archive could not give whole means the archive is bad: the commit is not marked applied.
          yield* run.storeFiles(
            names.map((name) => {
              const [, year, cve] = CVE_FILE.exec(name)!
              return `PoC-in-GitHub/${year}/${cve}.json`
            }),
            entry
          )
        }))
        return { cursor: { lastDelta: sha }, url: archive }
      })
  )
