import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import type { SyncOptions } from "../../src/feeds/CatalogueSync.ts"
import { FeedCursors } from "../../src/feeds/FeedCursors.ts"
import { syncSources } from "../../src/feeds/FeedSync.ts"
import { buildSummary } from "../../src/vulns/Summary.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SqlBackends } from "../support/database.ts"
import { type FeedMirror, feedMirror, kevCatalogue, mirrorConfig } from "../support/feedMirror.ts"

const FEEDS = ["cisa-kev", "epss", "exploit-db", "nuclei"]
const KEV = "/cisa-kev/known_exploited_vulnerabilities.json"
const EPSS = "/epss/epss_scores-current.csv.gz"
/** Short waits and inline normalisation: the mirror answers at once, and worker start-up would dominate. */
const OPTIONS: SyncOptions = { attempts: 2, backoffBaseMs: 10, ingest: { workers: 0 } }

/** Runs `body` against a fresh mirror, every feed's URL pointed at it (metasploit at a 404, never the internet). */
const onMirror = <A, E, R>(body: (mirror: FeedMirror) => Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.gen(function*() {
    const mirror = yield* feedMirror
    const config = { ...mirrorConfig(mirror), VDB_FEED_METASPLOIT_URL: mirror.url("/metasploit/none.json") }
    return yield* body(mirror).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(config))))
  }))

const byName = <T extends { readonly source: string }>(rows: ReadonlyArray<T>) =>
  Object.fromEntries(rows.map((r) => [r.source, r]))

describe.each(SqlBackends)("live catalogue feeds on the mirror ($name)", ({ layer: database }) => {
  const app = Layer.mergeAll(VulnStore.layer, FeedCursors.layer).pipe(
    Layer.provideMerge(database),
    Layer.merge(NodeHttpClient.layerUndici)
  )
  layer(app, { excludeTestServices: true })((it) => {
    it.effect(
      "first sync stores every catalogue; a second asks conditionally and changes nothing; a change is picked up",
      () =>
        onMirror((mirror) =>
          Effect.gen(function*() {
            const store = yield* VulnStore
            const cursors = yield* FeedCursors
            const first = byName(yield* syncSources(FEEDS, OPTIONS))
            for (const source of FEEDS) {
              assert.strictEqual(first[source]!.status, "updated", `${source}: ${JSON.stringify(first[source])}`)
            }
            assert.strictEqual(first["cisa-kev"]!.changed, 44)
            assert.strictEqual(first["epss"]!.failed, 0)
            assert.ok(mirror.requests.every((r) => !r.conditional && r.userAgent?.startsWith("vdb/") === true))

            const log4shell = yield* store.lookup("CVE-2021-44228", { bodies: false })
            assert.ok(log4shell.records.some((r) => r.source === "cisa-kev"))
            const summary = buildSummary("CVE-2021-44228", log4shell)!
            assert.ok(Math.abs(summary.lastFetchedAt! - Date.now() / 1000) < 120, "lastFetchedAt is the sync's time")
            assert.ok(
              (yield* store.exploits("CVE-2021-44228", { limit: 100, offset: 0, includeContent: false })).count > 0
            )
            const kevState = (yield* cursors.get("cisa-kev"))!
            assert.ok(kevState.cursor.etag !== undefined && kevState.lastUrl === mirror.url(KEV))
            assert.strictEqual(kevState.recordsChanged, 44)

            mirror.requests.length = 0
            const second = byName(yield* syncSources(FEEDS, OPTIONS))
            for (const source of FEEDS) assert.strictEqual(second[source]!.status, "unchanged")
            assert.deepStrictEqual(mirror.requests.map((r) => [r.conditional, r.status]), FEEDS.map(() => [true, 304]))

            // The publisher changes one entry and adds a malformed one: one record changes, one fails, the rest go on.
            const catalogue = JSON.parse(kevCatalogue()) as { vulnerabilities: Array<Record<string, unknown>> }
            catalogue.vulnerabilities[0] = { ...catalogue.vulnerabilities[0], notes: "updated upstream" }
            catalogue.vulnerabilities.push({ cveID: "CVE-20X1-BAD", dateAdded: "2025-01-01" })
            mirror.publish(KEV, JSON.stringify(catalogue), "application/json")
            const third = byName(yield* syncSources(["cisa-kev"], OPTIONS))
            assert.deepStrictEqual([third["cisa-kev"]!.status, third["cisa-kev"]!.changed, third["cisa-kev"]!.failed], [
              "updated",
              1,
              1
            ])
            assert.notStrictEqual((yield* cursors.get("cisa-kev"))!.cursor.etag, kevState.cursor.etag)
          })
        ),
      { timeout: 60_000 }
    )

    it.effect(
      "each fault gives a clear status, leaves the cursor where it was, and the next run recovers",
      () =>
        onMirror((mirror) =>
          Effect.gen(function*() {
            const cursors = yield* FeedCursors
            // Start from a known cursor: a full fetch of every catalogue from this mirror.
            yield* syncSources(FEEDS, { ...OPTIONS, full: true })
            const faults = [
              [KEV, { kind: "status", status: 429, retryAfter: "3600" }, "RateLimited"],
              [KEV, { kind: "status", status: 503, retryAfter: "3600" }, "RateLimited"],
              [KEV, { kind: "stopHalfway" }, "Truncated"],
              [KEV, { kind: "lyingLength" }, "LengthMismatch"],
              [KEV, { kind: "wrongType" }, "WrongContentType"],
              [EPSS, { kind: "truncatedGzip" }, "Truncated"],
              [EPSS, { kind: "bomb" }, "CompressionBomb"]
            ] as const
            for (const [path, fault, kind] of faults) {
              const source = path.split("/")[1]!
              const before = (yield* cursors.get(source))!
              mirror.fault(path, fault)
              const [failed] = yield* syncSources([source], { ...OPTIONS, full: true })
              assert.strictEqual(failed!.status, "failed", `${fault.kind}: ${JSON.stringify(failed)}`)
              assert.strictEqual(failed!.error?.kind, kind, `${fault.kind}: ${failed!.error?.message}`)
              const after = (yield* cursors.get(source))!
              assert.deepStrictEqual(after.cursor, before.cursor, `${fault.kind} moved the cursor`)
              assert.strictEqual(after.lastErrorKind, kind)
              assert.strictEqual(after.lastSuccessAt?.getTime(), before.lastSuccessAt?.getTime())
              if (fault.kind === "status") {
                // Retry-After beyond the run's deadline: no retry now, the next run is scheduled then.
                assert.ok(failed!.nextRunAt.getTime() >= Date.now() + 3500 * 1000)
              }
              mirror.fault(path, undefined)
              const [recovered] = yield* syncSources([source], { ...OPTIONS, full: true })
              assert.strictEqual(recovered!.status, "updated", `${fault.kind} recovery: ${JSON.stringify(recovered)}`)
              const healed = (yield* cursors.get(source))!
              assert.strictEqual(healed.lastError, undefined)
              assert.strictEqual(healed.failures, 0)
            }

            // Redirects: followed within the loopback mirror, refused to plain http elsewhere (no request is sent there).
            mirror.fault(KEV, { kind: "times", n: 1, fault: { kind: "redirect", location: "/cisa-kev/copy.json" } })
            mirror.publish("/cisa-kev/copy.json", kevCatalogue(), "application/json")
            assert.strictEqual((yield* syncSources(["cisa-kev"], { ...OPTIONS, full: true }))[0]!.status, "updated")
            assert.strictEqual((yield* cursors.get("cisa-kev"))!.lastUrl, mirror.url("/cisa-kev/copy.json"))
            mirror.fault(KEV, { kind: "redirect", location: "http://example.com/kev.json" })
            const [bounced] = yield* syncSources(["cisa-kev"], { ...OPTIONS, full: true })
            assert.strictEqual(bounced!.error?.kind, "InsecureRedirect")
            mirror.fault(KEV, undefined)

            // A short Retry-After inside the deadline is waited for, and the same run succeeds.
            mirror.fault(KEV, { kind: "times", n: 1, fault: { kind: "status", status: 429, retryAfter: "1" } })
            const started = Date.now()
            const [waited] = yield* syncSources(["cisa-kev"], { ...OPTIONS, full: true })
            assert.strictEqual(waited!.status, "updated")
            assert.ok(Date.now() - started >= 900, "Retry-After: 1 was honoured")
          })
        ),
      { timeout: 60_000 }
    )

    it.effect(
      "nist-nvd: a first run pages through everything, then lastMod windows from the watermark; apiKey sent, never shown",
      () =>
        onMirror((mirror) =>
          Effect.gen(function*() {
            const store = yield* VulnStore
            const cursors = yield* FeedCursors
            const nvd = { ...OPTIONS, requestGapMs: 0, pageSize: 10 }
            const total = mirror.nvd.length
            const [first] = yield* syncSources(["nist-nvd"], nvd).pipe(
              Effect.provide(
                ConfigProvider.layer(
                  ConfigProvider.fromUnknown({ ...mirrorConfig(mirror), VDB_NVD_API_KEY: "k-secret-123" })
                )
              )
            )
            assert.deepStrictEqual([first!.status, first!.changed, first!.failed], ["updated", total, 0])
            const pages = mirror.requests.filter((r) => r.path === "/nist-nvd/cves/2.0")
            assert.strictEqual(pages.length, Math.ceil(total / 10))
            assert.ok(pages.every((r) => r.apiKey && !r.query.includes("lastMod")))
            const watermark = (yield* cursors.get("nist-nvd"))!.cursor.watermark
            assert.ok(watermark !== undefined)
            assert.ok(!JSON.stringify(yield* cursors.get("nist-nvd")).includes("k-secret-123"))
            assert.ok(
              (yield* store.lookup("CVE-2014-1424", { bodies: false })).records.some((r) => r.source === "nist-nvd")
            )

            mirror.requests.length = 0
            const [second] = yield* syncSources(["nist-nvd"], nvd)
            assert.deepStrictEqual([second!.status, second!.changed], ["unchanged", 0])
            assert.ok(mirror.requests.every((r) => r.query.includes("lastModStartDate") && !r.apiKey))

            // NVD modifies one CVE: the next window brings exactly that one.
            const item = mirror.nvd[0]!
            mirror.nvd[0] = {
              cve: { ...item.cve, lastModified: new Date().toISOString().slice(0, 23), vulnStatus: "Modified" }
            }
            const [third] = yield* syncSources(["nist-nvd"], nvd)
            assert.deepStrictEqual([third!.status, third!.changed], ["updated", 1])
            assert.ok((yield* cursors.get("nist-nvd"))!.cursor.watermark! > watermark)
          })
        ),
      { timeout: 60_000 }
    )

    it.effect(
      "nist-nvd: a page cut half-way through a run fails it without moving the watermark; the next run converges once",
      () =>
        onMirror((mirror) =>
          Effect.gen(function*() {
            const store = yield* VulnStore
            const cursors = yield* FeedCursors
            const nvd = { ...OPTIONS, attempts: 1, requestGapMs: 0, pageSize: 10 }
            const NVD = "/nist-nvd/cves/2.0"
            const total = mirror.nvd.length
            const nvdRecords = (id: string) =>
              Effect.map(
                store.lookup(id, { bodies: false }),
                (found) => found.records.filter((r) => r.source === "nist-nvd").length
              )

            // A full run (everything, no window, as a first run; the database may hold an earlier test's
            // cursor): page 2 of 4 stops half-way.
            const before = (yield* cursors.get("nist-nvd"))?.cursor.watermark
            mirror.fault(NVD, { kind: "after", n: 1, fault: { kind: "times", n: 1, fault: { kind: "stopHalfway" } } })
            const [cut] = yield* syncSources(["nist-nvd"], { ...nvd, full: true })
            assert.strictEqual(cut!.status, "failed", JSON.stringify(cut))
            assert.strictEqual((yield* cursors.get("nist-nvd"))?.cursor.watermark, before)

            const [first] = yield* syncSources(["nist-nvd"], { ...nvd, full: true })
            assert.notStrictEqual(first!.status, "failed", JSON.stringify(first))
            const watermark = (yield* cursors.get("nist-nvd"))!.cursor.watermark!
            assert.ok(watermark !== undefined && watermark !== before)
            for (const { cve } of mirror.nvd) assert.strictEqual(yield* nvdRecords(cve.id as string), 1, String(cve.id))

            // NVD modifies 12 CVEs: one window of two pages, whose second stops half-way.
            const now = new Date().toISOString().slice(0, 23)
            for (let n = 0; n < 12; n++) {
              const item = mirror.nvd[n]!
              mirror.nvd[n] = { cve: { ...item.cve, lastModified: now, vulnStatus: "Modified" } }
            }
            mirror.fault(NVD, { kind: "after", n: 1, fault: { kind: "times", n: 1, fault: { kind: "stopHalfway" } } })
            const [cutWindow] = yield* syncSources(["nist-nvd"], nvd)
            assert.strictEqual(cutWindow!.status, "failed", JSON.stringify(cutWindow))
            assert.strictEqual((yield* cursors.get("nist-nvd"))!.cursor.watermark, watermark)

            const [again] = yield* syncSources(["nist-nvd"], nvd)
            assert.strictEqual(again!.status, "updated", JSON.stringify(again))
            assert.ok((yield* cursors.get("nist-nvd"))!.cursor.watermark! > watermark)
            for (const { cve } of mirror.nvd) assert.strictEqual(yield* nvdRecords(cve.id as string), 1, String(cve.id))
            const modified = yield* store.lookup(mirror.nvd[11]!.cve.id as string, { bodies: true })
            assert.ok(JSON.stringify(modified.records).includes("Modified"), "the window's second page was stored")
            assert.ok(total > 20)
          })
        ),
      { timeout: 60_000 }
    )
  })
})
