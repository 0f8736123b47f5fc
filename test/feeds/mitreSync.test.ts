import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, it as plain, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { mkdtempSync, readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import type { SyncOptions } from "../../src/feeds/CatalogueSync.ts"
import { FeedCursors } from "../../src/feeds/FeedCursors.ts"
import { syncSources } from "../../src/feeds/FeedSync.ts"
import { assetOf, deltasAfter } from "../../src/feeds/MitreSync.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SqlBackends } from "../support/database.ts"
import { type FeedMirror, feedMirror } from "../support/feedMirror.ts"
import { baselineZip, cvelistMirror, cvelistRecords, deltaZip, RELEASES_PATH } from "../support/mirror/cvelist.ts"
import { zipBomb } from "../support/mirror/zipWriter.ts"

const OPTIONS: SyncOptions = { attempts: 2, backoffBaseMs: 10, ingest: { workers: 0 } }
// A temporary folder of this file's own (each test file runs in its own process), so other files' feeds running at the same time are not counted.
process.env.TMPDIR = mkdtempSync(`${tmpdir()}/vdb-mitre-test-`)
const leftovers = () => readdirSync(tmpdir()).filter((f) => f.startsWith("vdb-feed-")).length

const onMirror = <A, E, R>(body: (mirror: FeedMirror) => Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.gen(function*() {
    const mirror = yield* feedMirror
    const config = { VDB_FEED_MITRE_URL: mirror.url(RELEASES_PATH) }
    return yield* body(mirror).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(config))))
  }))

describe.each(SqlBackends)("mitre: the CVE List's releases on the mirror ($name)", ({ layer: database }) => {
  const app = Layer.mergeAll(VulnStore.layer, FeedCursors.layer).pipe(
    Layer.provideMerge(database),
    Layer.merge(NodeHttpClient.layerUndici)
  )
  layer(app, { excludeTestServices: true })((it) => {
    it.effect(
      "baseline then the day's newest delta; a new delta only; 304 when nothing is new; zip faults refused and recovered",
      () =>
        onMirror((mirror) =>
          Effect.gen(function*() {
            const store = yield* VulnStore
            const cursors = yield* FeedCursors
            const cvelist = cvelistMirror(mirror)
            const records = cvelistRecords()
            const before = leftovers()
            cvelist.release("cve_2025-08-25_0100Z", [
              ["2025-08-25_all_CVEs_at_midnight.zip.zip", baselineZip(records.slice(0, 40))],
              ["2025-08-25_delta_CVEs_at_0100Z.zip", deltaZip(records.slice(40, 42))]
            ])

            const [first] = yield* syncSources(["mitre"], OPTIONS)
            assert.deepStrictEqual(
              [first!.status, first!.changed, first!.failed],
              ["updated", 42, 0],
              JSON.stringify(first)
            )
            assert.strictEqual((yield* cursors.get("mitre"))!.cursor.lastDelta, "2025-08-25_delta_CVEs_at_0100Z.zip")
            assert.ok(
              (yield* store.lookup("CVE-2021-44228", { bodies: false })).records.some((r) => r.source === "mitre")
            )
            assert.ok(
              (yield* store.lookup(records[41]!.id, { bodies: false })).records.some((r) => r.source === "mitre")
            )

            // Nothing new: one conditional request, answered 304.
            mirror.requests.length = 0
            const [second] = yield* syncSources(["mitre"], OPTIONS)
            assert.strictEqual(second!.status, "unchanged")
            assert.deepStrictEqual(mirror.requests.map((r) => [r.path, r.status]), [[RELEASES_PATH, 304]])

            // The next hour's delta (cumulative since midnight) brings new records and one malformed: only it is fetched.
            const bad = { id: "CVE-2025-0000", text: Buffer.from("{\"dataType\": \"CVE_RECORD\", \"cveMetadata\": ") }
            cvelist.release("cve_2025-08-25_0200Z", [
              ["2025-08-25_all_CVEs_at_midnight.zip.zip", baselineZip(records.slice(0, 40))],
              ["2025-08-25_delta_CVEs_at_0200Z.zip", deltaZip([...records.slice(40, 45), bad])]
            ])
            mirror.requests.length = 0
            const [third] = yield* syncSources(["mitre"], OPTIONS)
            assert.deepStrictEqual(
              [third!.status, third!.changed, third!.failed],
              ["updated", 3, 1],
              JSON.stringify(third)
            )
            assert.deepStrictEqual(mirror.requests.map((r) => r.path), [
              RELEASES_PATH,
              cvelist.assetPath("cve_2025-08-25_0200Z", "2025-08-25_delta_CVEs_at_0200Z.zip")
            ])

            // Each fault of the next delta: a clear status, the cursor where it was, no temporary file left; then recovery.
            const tag = "cve_2025-08-25_0300Z"
            const name = "2025-08-25_delta_CVEs_at_0300Z.zip"
            const good = deltaZip(records.slice(40, 50))
            const [path] = cvelist.release(tag, [[name, good]])
            const faults = [
              ["truncatedGzip", "Truncated"],
              ["lyingLength", "LengthMismatch"],
              ["stopHalfway", "Truncated"],
              ["bomb", "CompressionBomb"],
              ["status", "RateLimited"]
            ] as const
            for (const [kind, expected] of faults) {
              if (kind === "bomb") {
                mirror.publish(path!, zipBomb("deltaCves/CVE-2099-0001.json"), "application/octet-stream")
              } else if (kind === "status") {
                mirror.fault(RELEASES_PATH, { kind: "status", status: 429, retryAfter: "86400" })
              } else mirror.fault(path!, { kind })
              const [outcome] = yield* syncSources(["mitre"], OPTIONS)
              assert.strictEqual(outcome!.status, "failed", kind)
              assert.strictEqual(outcome!.error?.kind, expected, `${kind}: ${outcome!.error?.message}`)
              const state = (yield* cursors.get("mitre"))!
              assert.strictEqual(state.cursor.lastDelta, "2025-08-25_delta_CVEs_at_0200Z.zip", kind)
              assert.strictEqual(state.lastErrorKind, expected)
              mirror.fault(path!, undefined)
              mirror.fault(RELEASES_PATH, undefined)
              mirror.publish(path!, good, "application/octet-stream")
            }
            assert.ok(
              (yield* store.lookup("CVE-2099-0001", { bodies: false })).records.length === 0,
              "nothing of the bomb is stored"
            )
            const [recovered] = yield* syncSources(["mitre"], OPTIONS)
            assert.deepStrictEqual([recovered!.status, recovered!.changed], ["updated", 5], JSON.stringify(recovered))
            const healed = (yield* cursors.get("mitre"))!
            assert.deepStrictEqual([healed.cursor.lastDelta, healed.failures, healed.lastError], [name, 0, undefined])
            assert.strictEqual(leftovers(), before, "every temporary archive is removed")
          })
        ),
      { timeout: 60_000 }
    )
  })
})

describe("mitre: which deltas a run applies", () => {
  const assets = (...names: Array<string>) => names.map((n) => assetOf(n, `https://example.org/${n}`)!)
  const plan = (from: string, ...names: Array<string>) => {
    const { plan, waiting } = deltasAfter(assets(...names), assetOf(from, "")!.key)
    return { names: plan.map((a) => a.name), waiting }
  }
  plain("the newest delta of each day after the cursor; a past day only through its end-of-day delta", () => {
    // Same day: the newest hourly is enough (cumulative since midnight).
    assert.deepStrictEqual(
      plan(
        "2025-08-25_delta_CVEs_at_0100Z.zip",
        "2025-08-25_delta_CVEs_at_0200Z.zip",
        "2025-08-25_delta_CVEs_at_0300Z.zip"
      ),
      {
        names: ["2025-08-25_delta_CVEs_at_0300Z.zip"],
        waiting: false
      }
    )
    // The next day has begun but the day's end-of-day delta is not out: stop at the day's newest, and wait.
    assert.deepStrictEqual(
      plan(
        "2025-08-25_delta_CVEs_at_2200Z.zip",
        "2025-08-25_delta_CVEs_at_2300Z.zip",
        "2025-08-26_delta_CVEs_at_0100Z.zip"
      ),
      {
        names: ["2025-08-25_delta_CVEs_at_2300Z.zip"],
        waiting: true
      }
    )
    // With it: the day closes, and the next day's newest follows.
    assert.deepStrictEqual(
      plan(
        "2025-08-25_delta_CVEs_at_2200Z.zip",
        "2025-08-25_delta_CVEs_at_end_of_day.zip",
        "2025-08-26_delta_CVEs_at_0100Z.zip",
        "2025-08-26_delta_CVEs_at_0200Z.zip"
      ),
      { names: ["2025-08-25_delta_CVEs_at_end_of_day.zip", "2025-08-26_delta_CVEs_at_0200Z.zip"], waiting: false }
    )
    // From a baseline: that day's deltas count; baselines and unknown names are never deltas.
    assert.deepStrictEqual(
      plan(
        "2025-08-25_all_CVEs_at_midnight.zip.zip",
        "2025-08-25_all_CVEs_at_midnight.zip.zip",
        "2025-08-25_delta_CVEs_at_0100Z.zip"
      ),
      {
        names: ["2025-08-25_delta_CVEs_at_0100Z.zip"],
        waiting: false
      }
    )
    assert.strictEqual(assetOf("2025-08-25_delta_CVEs_at_0100Z.zip.sig", ""), undefined)
  })
})
