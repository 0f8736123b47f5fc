import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import type { SyncOptions } from "../../src/feeds/CatalogueSync.ts"
import { FeedCursors } from "../../src/feeds/FeedCursors.ts"
import { syncSources } from "../../src/feeds/FeedSync.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SqlBackends } from "../support/database.ts"
import { type FeedMirror, feedMirror } from "../support/feedMirror.ts"
import { osvRecords, publishEcosystem } from "../support/mirror/osv.ts"
import { zipBomb } from "../support/mirror/zipWriter.ts"

const OPTIONS: SyncOptions = { attempts: 2, backoffBaseMs: 10, ingest: { workers: 0 } }

const onMirror = <A, E, R>(body: (mirror: FeedMirror) => Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.gen(function*() {
    const mirror = yield* feedMirror
    const config = { VDB_FEED_OSV_URL: mirror.url("/osv"), VDB_OSV_ECOSYSTEMS: "Go, PyPI, crates.io" }
    return yield* body(mirror).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(config))))
  }))

describe.each(SqlBackends)(
  "osv: the bucket's archives and change lists on the mirror ($name)",
  ({ layer: database }) => {
    const app = Layer.mergeAll(VulnStore.layer, FeedCursors.layer).pipe(
      Layer.provideMerge(database),
      Layer.merge(NodeHttpClient.layerUndici)
    )
    layer(app, { excludeTestServices: true })((it) => {
      it.effect(
        "all.zip first, then only the changed {id}.json of modified_id.csv; faults refused with the positions kept",
        () =>
          onMirror((mirror) =>
            Effect.gen(function*() {
              const store = yield* VulnStore
              const cursors = yield* FeedCursors
              const records = osvRecords()
              for (const [ecosystem, list] of Object.entries(records)) publishEcosystem(mirror, ecosystem, list)
              const total = Object.values(records).reduce((n, l) => n + l.length, 0)

              const [first] = yield* syncSources(["osv"], OPTIONS)
              assert.deepStrictEqual(
                [first!.status, first!.changed, first!.failed],
                ["updated", total, 0],
                JSON.stringify(first)
              )
              assert.deepStrictEqual(
                mirror.requests.map((r) => r.path),
                ["Go", "PyPI", "crates.io"].flatMap((e) => [`/osv/${e}/modified_id.csv`, `/osv/${e}/all.zip`])
              )
              assert.ok(
                (yield* store.lookup("PYSEC-2021-66", { bodies: false })).records.some((r) => r.source === "osv")
              )
              const positions = (yield* cursors.get("osv"))!.cursor.positions!
              assert.deepStrictEqual(Object.keys(positions).sort(), ["Go", "PyPI", "crates.io"])

              // Nothing new: the three change lists, nothing else, each asked with its ETag and answered 304.
              mirror.requests.length = 0
              const [second] = yield* syncSources(["osv"], OPTIONS)
              assert.deepStrictEqual([second!.status, second!.changed], ["unchanged", 0])
              assert.deepStrictEqual(
                mirror.requests.map((r) => [r.path, r.conditional, r.status]),
                ["Go", "PyPI", "crates.io"].map((e) => [`/osv/${e}/modified_id.csv`, true, 304])
              )

              // PyPI changes one record and publishes a malformed one: exactly those two are fetched; one changes, one fails.
              const now = new Date().toISOString().replace(/\.\d+Z$/, "Z")
              const pypi = records["PyPI"]!.map((r) => ({ ...r }))
              const doc = JSON.parse(pypi[0]!.text.toString("utf8")) as Record<string, unknown>
              pypi[0] = {
                id: pypi[0]!.id,
                modified: now,
                text: Buffer.from(JSON.stringify({ ...doc, modified: now, summary: "changed upstream" }))
              }
              pypi.push({
                id: "PYSEC-2099-1",
                modified: now,
                text: Buffer.from("{\"id\": \"PYSEC-2099-1\", \"modified\": ")
              })
              publishEcosystem(mirror, "PyPI", pypi)
              mirror.requests.length = 0
              const [third] = yield* syncSources(["osv"], OPTIONS)
              assert.deepStrictEqual(
                [third!.status, third!.changed, third!.failed],
                ["updated", 1, 1],
                JSON.stringify(third)
              )
              assert.deepStrictEqual(
                mirror.requests.filter((r) => r.path.endsWith(".json")).map((r) => r.path).sort(),
                [`/osv/PyPI/${pypi[0]!.id}.json`, "/osv/PyPI/PYSEC-2099-1.json"].sort()
              )
              const moved = (yield* cursors.get("osv"))!.cursor.positions!
              assert.strictEqual(moved["PyPI"], now)

              // Faults: a cut or bombed all.zip (a --full run), a 429 on a change list: clear status, positions kept; then recovery.
              const faults = [
                ["/osv/Go/all.zip", { kind: "truncatedGzip" }, "Truncated"],
                ["/osv/Go/all.zip", { kind: "lyingLength" }, "LengthMismatch"],
                ["/osv/PyPI/modified_id.csv", { kind: "status", status: 429, retryAfter: "86400" }, "RateLimited"]
              ] as const
              for (const [path, fault, expected] of faults) {
                mirror.fault(path, fault)
                const [outcome] = yield* syncSources(["osv"], { ...OPTIONS, full: fault.kind !== "status" })
                assert.strictEqual(outcome!.error?.kind, expected, `${fault.kind}: ${JSON.stringify(outcome)}`)
                assert.deepStrictEqual((yield* cursors.get("osv"))!.cursor.positions, moved)
                mirror.fault(path, undefined)
              }
              mirror.publish("/osv/Go/all.zip", zipBomb("GO-2099-0001.json"), "application/zip")
              const [bombed] = yield* syncSources(["osv"], { ...OPTIONS, full: true })
              assert.strictEqual(bombed!.error?.kind, "CompressionBomb")
              assert.deepStrictEqual((yield* cursors.get("osv"))!.cursor.positions, moved)
              publishEcosystem(mirror, "Go", records["Go"]!)
              const [recovered] = yield* syncSources(["osv"], { ...OPTIONS, full: true })
              assert.deepStrictEqual(
                [recovered!.status, recovered!.failed],
                ["unchanged", 1],
                JSON.stringify(recovered)
              )
              assert.strictEqual((yield* cursors.get("osv"))!.failures, 0)
            })
          ),
        { timeout: 60_000 }
      )
    })
  }
)
