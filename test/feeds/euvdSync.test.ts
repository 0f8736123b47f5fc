import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { FeedCursors } from "../../src/feeds/FeedCursors.ts"
import { syncSources } from "../../src/feeds/FeedSync.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SqlBackends } from "../support/database.ts"
import { apiFeedsApp, FAST, onMirror } from "./apiFeeds.ts"

const PATH = "/euvd/api/search"
/** EUVD's own date form, for a record the publisher updates today. */
const euvdNow = () => {
  const d = new Date()
  const h = d.getUTCHours()
  const month = d.toLocaleString("en-US", { month: "short", timeZone: "UTC" })
  const pad = (n: number) => String(n).padStart(2, "0")
  return `${month} ${d.getUTCDate()}, ${d.getUTCFullYear()}, ${h % 12 === 0 ? 12 : h % 12}:${pad(d.getUTCMinutes())}:${
    pad(d.getUTCSeconds())
  } ${h < 12 ? "AM" : "PM"}`
}

describe.each(SqlBackends)("euvd: ENISA's search API on the mirror ($name)", ({ layer: database }) => {
  layer(apiFeedsApp(database), { excludeTestServices: true })((it) => {
    it.effect(
      "first load walks update windows from 1999 page by page; then from the watermark day; 429 and a bad item",
      () =>
        onMirror((mirror) =>
          Effect.gen(function*() {
            const store = yield* VulnStore
            const cursors = yield* FeedCursors
            const total = mirror.api.euvd.length
            const [first] = yield* syncSources(["euvd"], FAST)
            assert.deepStrictEqual(
              [first!.status, first!.changed, first!.failed],
              ["updated", total, 0],
              JSON.stringify(first)
            )
            const requests = mirror.api.log.filter((r) => r.path === PATH)
            assert.strictEqual(requests[0]!.query.get("fromUpdatedDate"), "1999-01-01")
            assert.ok(requests.every((r) => r.query.get("size") === "2" && r.userAgent?.startsWith("vdb/") === true))
            assert.ok(requests.some((r) => r.query.get("page") === "1"), "a window with more than a page is paged")
            const today = new Date().toISOString().slice(0, 10)
            assert.strictEqual((yield* cursors.get("euvd"))!.cursor.watermark, `${today}T00:00:00.000Z`)
            assert.ok(
              (yield* store.lookup("EUVD-2023-2795", { bodies: false })).records.some((r) => r.source === "euvd")
            )

            // Nothing new: one request for today's window, nothing stored.
            mirror.api.log.length = 0
            const [second] = yield* syncSources(["euvd"], FAST)
            assert.deepStrictEqual([second!.status, second!.changed], ["unchanged", 0])
            assert.deepStrictEqual(
              mirror.api.log.map((r) => [r.query.get("fromUpdatedDate"), r.query.get("toUpdatedDate")]),
              [[today, today]]
            )

            // ENISA rate-limits once (a short Retry-After, waited within the run), updates one record and publishes a broken one.
            mirror.api.euvd[0] = { ...mirror.api.euvd[0], description: "updated upstream", dateUpdated: euvdNow() }
            mirror.api.euvd.push({ ...mirror.api.euvd[1], id: "EUVD-BAD", dateUpdated: euvdNow() })
            mirror.api.fault(PATH, { status: 429, headers: { "retry-after": "1" }, times: 1 })
            mirror.api.log.length = 0
            const [third] = yield* syncSources(["euvd"], FAST)
            assert.deepStrictEqual(
              [third!.status, third!.changed, third!.failed],
              ["updated", 1, 1],
              JSON.stringify(third)
            )
            assert.deepStrictEqual(mirror.api.log.map((r) => r.status), [429, 200])

            // A Retry-After past the run's end: failed, cursor kept, next run then.
            const before = (yield* cursors.get("euvd"))!.cursor
            mirror.api.fault(PATH, { status: 429, headers: { "retry-after": "7200" }, times: 1 })
            const [limited] = yield* syncSources(["euvd"], FAST)
            assert.deepStrictEqual([limited!.status, limited!.error?.kind], ["failed", "RateLimited"])
            assert.ok(limited!.nextRunAt.getTime() >= Date.now() + 7000_000)
            assert.deepStrictEqual((yield* cursors.get("euvd"))!.cursor, before)

            // A page past the cap is refused, not buffered.
            const [big] = yield* syncSources(["euvd"], {
              ...FAST,
              full: true,
              limits: { maxBytes: 1000, maxInflatedBytes: 1000, maxRatio: 100 }
            })
            assert.deepStrictEqual([big!.status, big!.error?.kind], ["failed", "TooLarge"])
          })
        ),
      { timeout: 60_000 }
    )
  })
})
