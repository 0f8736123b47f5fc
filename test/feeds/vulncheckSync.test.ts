import { assert, describe, layer } from "@effect/vitest"
import { Effect, Logger } from "effect"
import { FeedCursors } from "../../src/feeds/FeedCursors.ts"
import { FeedRunLock } from "../../src/feeds/FeedRunLock.ts"
import { syncSources, syncStatus } from "../../src/feeds/FeedSync.ts"
import { scheduledRun, syncExclusive } from "../../src/feeds/SyncRuns.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SqlBackends } from "../support/database.ts"
import { apiFeedsApp, FAST, onMirror } from "./apiFeeds.ts"

const TOKEN = "vulncheck_secret_token_0123456789abcdef"
const FEEDS = ["vulncheck-kev", "vulncheck-nvd"]

describe.each(SqlBackends)(
  "vulncheck-kev / vulncheck-nvd: VulnCheck's index API on the mirror ($name)",
  ({ layer: database }) => {
    layer(apiFeedsApp(database), { excludeTestServices: true })((it) => {
      it.effect(
        "without a token: skipped, not a request, not a word; the schedule's tick too; status says why",
        () =>
          onMirror((mirror) =>
            Effect.gen(function*() {
              const logged: Array<unknown> = []
              const quiet = Effect.provide(Logger.layer([Logger.make(({ message }) => void logged.push(message))]))
              const outcomes = yield* syncSources(FEEDS, FAST).pipe(quiet)
              // The schedule's tick and `vdb sync`'s run go through syncExclusive: off, not a run that returned nothing.
              yield* scheduledRun("vulncheck-kev", () => 60_000, FAST).pipe(quiet)
              const exclusive = yield* syncExclusive("vulncheck-nvd", FAST).pipe(quiet)
              assert.deepStrictEqual([outcomes, mirror.api.log, logged], [[], [], []])
              assert.deepStrictEqual(exclusive, {
                source: "vulncheck-nvd",
                status: "off",
                reason: "needs VDB_VULNCHECK_TOKEN"
              })
              assert.strictEqual(yield* (yield* FeedCursors).get("vulncheck-kev"), undefined)
              const status = (yield* syncStatus()).filter((s) => FEEDS.includes(s.source) || s.source === "ghsa")
              assert.deepStrictEqual(status.map((s) => [s.source, s.off, s.lastAttemptAt]), [
                ["ghsa", undefined, undefined],
                ["vulncheck-kev", "needs VDB_VULNCHECK_TOKEN", undefined],
                ["vulncheck-nvd", "needs VDB_VULNCHECK_TOKEN", undefined]
              ])
            }).pipe(Effect.provide(FeedRunLock.layer))
          ),
        { timeout: 30_000 }
      )

      it.effect(
        "with a token: cursor paging, Bearer sent and shown nowhere; NVD++ asks from the last run's day; a bad entry fails alone",
        () =>
          onMirror((mirror) =>
            Effect.gen(function*() {
              const store = yield* VulnStore
              const cursors = yield* FeedCursors
              const logged: Array<string> = []
              const logs = Logger.layer([Logger.make(({ message }) => void logged.push(JSON.stringify(message)))])
              const { kev, nvd } = mirror.api.vulncheck
              kev.push({ ...kev[0], cve: ["CVE-20X1-BAD"] })
              const [k, n] = yield* syncSources(FEEDS, FAST).pipe(Effect.provide(logs))
              assert.deepStrictEqual([k!.source, k!.status, k!.changed, k!.failed], [
                "vulncheck-kev",
                "updated",
                kev.length - 1,
                1
              ], JSON.stringify(k))
              assert.deepStrictEqual([n!.source, n!.status, n!.changed, n!.failed], [
                "vulncheck-nvd",
                "updated",
                nvd.length,
                0
              ], JSON.stringify(n))
              const kevPages = mirror.api.log.filter((r) => r.path.endsWith("/vulncheck-kev"))
              assert.strictEqual(kevPages.length, Math.ceil(kev.length / 2))
              assert.ok(
                kevPages[0]!.query.get("start_cursor") === "true" &&
                  kevPages.slice(1).every((r) => r.query.has("cursor"))
              )
              assert.ok(mirror.api.log.every((r) => r.authorization === `Bearer ${TOKEN}`))
              const heartbleed = yield* store.lookup("CVE-2014-0160", { bodies: false })
              assert.ok(heartbleed.records.some((r) => r.source === "vulncheck-kev"))
              assert.strictEqual((yield* syncStatus()).find((s) => s.source === "vulncheck-kev")!.off, undefined)

              // VulnCheck answers 500 and then 401: the failures say so, without the token.
              mirror.api.fault("/vulncheck/v3/index/vulncheck-kev", { status: 500, times: 2 })
              mirror.api.fault("/vulncheck/v3/index/vulncheck-nvd2", { status: 401, times: 1 })
              const failed = yield* syncSources(FEEDS, FAST).pipe(Effect.provide(logs))
              assert.deepStrictEqual(failed.map((o) => [o.status, o.error?.kind]), [["failed", "HttpStatus"], [
                "failed",
                "HttpStatus"
              ]])
              const rows = [yield* cursors.get("vulncheck-kev"), yield* cursors.get("vulncheck-nvd")]
              assert.ok(logged.length > 0)
              for (const text of [...logged, JSON.stringify(failed), JSON.stringify(rows), JSON.stringify([k, n])]) {
                assert.ok(!text.includes(TOKEN) && !text.includes("vulncheck_secret"), text)
              }

              // NVD++: from the last complete run's day; one CVE modified since comes alone.
              mirror.api.log.length = 0
              nvd[0] = { ...nvd[0], lastModified: new Date().toISOString().slice(0, 23), vulnStatus: "Modified" }
              const [, again] = yield* syncSources(FEEDS, FAST)
              assert.deepStrictEqual([again!.status, again!.changed], ["updated", 1], JSON.stringify(again))
              const since = mirror.api.log.find((r) => r.path.endsWith("/vulncheck-nvd2"))!.query.get(
                "lastModStartDate"
              )
              assert.strictEqual(since, new Date().toISOString().slice(0, 10))
            }), { VDB_VULNCHECK_TOKEN: TOKEN }),
        { timeout: 60_000 }
      )
    })
  }
)
