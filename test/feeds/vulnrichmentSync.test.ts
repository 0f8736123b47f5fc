import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import type { SyncOptions } from "../../src/feeds/CatalogueSync.ts"
import { FeedCursors } from "../../src/feeds/FeedCursors.ts"
import { syncSources } from "../../src/feeds/FeedSync.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SqlBackends } from "../support/database.ts"
import { type FeedMirror, feedMirror } from "../support/feedMirror.ts"
import { vulnrichmentFiles, vulnrichmentMirror } from "../support/mirror/vulnrichment.ts"

const OPTIONS: SyncOptions = { attempts: 2, backoffBaseMs: 10, ingest: { workers: 0 } }

const onMirror = <A, E, R>(body: (mirror: FeedMirror) => Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.gen(function*() {
    const mirror = yield* feedMirror
    const config = { VDB_FEED_VULNRICHMENT_URL: mirror.url("/vulnrichment"), VDB_GITHUB_TOKEN: "ghp-secret-token" }
    return yield* body(mirror).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(config))))
  }))

describe.each(SqlBackends)(
  "vulnrichment: the repository through GitHub's API on the mirror ($name)",
  ({ layer: database }) => {
    const app = Layer.mergeAll(VulnStore.layer, FeedCursors.layer).pipe(
      Layer.provideMerge(database),
      Layer.merge(NodeHttpClient.layerUndici)
    )
    layer(app, { excludeTestServices: true })((it) => {
      it.effect(
        "the head's archive first; then the compared commit's changed files only; 304 when the head is the same",
        () =>
          onMirror((mirror) =>
            Effect.gen(function*() {
              const store = yield* VulnStore
              const cursors = yield* FeedCursors
              const repo = vulnrichmentMirror(mirror)
              const tree = vulnrichmentFiles()
              const first = repo.commit(tree)

              const [initial] = yield* syncSources(["vulnrichment"], OPTIONS)
              assert.deepStrictEqual(
                [initial!.status, initial!.changed, initial!.failed],
                ["updated", tree.size, 0],
                JSON.stringify(initial)
              )
              assert.deepStrictEqual(mirror.requests.map((r) => r.path), [
                "/vulnrichment/commits/develop",
                `/vulnrichment/zipball/${first}`
              ])
              assert.strictEqual((yield* cursors.get("vulnrichment"))!.cursor.lastDelta, first)
              assert.ok(
                (yield* store.lookup("CVE-2023-20198", { bodies: false })).records.some((r) => r.source === "mitre")
              )

              mirror.requests.length = 0
              const [same] = yield* syncSources(["vulnrichment"], OPTIONS)
              assert.strictEqual(same!.status, "unchanged")
              assert.deepStrictEqual(mirror.requests.map((r) => [r.path, r.status]), [[
                "/vulnrichment/commits/develop",
                304
              ]])

              // CISA updates one record and adds a malformed one: the comparison lists both, only they are fetched.
              const [path, body] = [...tree][0]!
              const record = JSON.parse(body.toString("utf8")) as { cveMetadata: Record<string, unknown> }
              const next = new Map(tree)
              next.set(
                path,
                Buffer.from(
                  JSON.stringify({
                    ...record,
                    cveMetadata: { ...record.cveMetadata, dateUpdated: new Date().toISOString() }
                  })
                )
              )
              next.set("2099/0xxx/CVE-2099-0001.json", Buffer.from("{\"dataType\": \"CVE_RECORD\","))
              const second = repo.commit(next)
              mirror.requests.length = 0
              const [incremental] = yield* syncSources(["vulnrichment"], OPTIONS)
              assert.deepStrictEqual([incremental!.status, incremental!.changed, incremental!.failed], [
                "updated",
                1,
                1
              ], JSON.stringify(incremental))
              assert.deepStrictEqual(
                mirror.requests.map((r) => r.path).sort(),
                [
                  "/vulnrichment/commits/develop",
                  `/vulnrichment/compare/${first}...${second}`,
                  `/vulnrichment/raw/${second}/${path}`,
                  `/vulnrichment/raw/${second}/2099/0xxx/CVE-2099-0001.json`
                ].sort()
              )
              assert.strictEqual((yield* cursors.get("vulnrichment"))!.cursor.lastDelta, second)
              assert.ok(!JSON.stringify(yield* cursors.get("vulnrichment")).includes("ghp-secret-token"))

              // A raw file cut half-way: a clear status, the cursor stays; the next run fetches it again.
              const third = repo.commit(
                new Map(
                  [...next].map((
                    [p, b]
                  ) => [p, p === path ? Buffer.from(b.toString("utf8").replace("}", ", \"x_note\": 1}")) : b])
                )
              )
              mirror.fault(`/vulnrichment/raw/${third}/${path}`, { kind: "lyingLength" })
              const [cut] = yield* syncSources(["vulnrichment"], OPTIONS)
              assert.strictEqual(cut!.error?.kind, "LengthMismatch", JSON.stringify(cut))
              assert.strictEqual((yield* cursors.get("vulnrichment"))!.cursor.lastDelta, second)
              mirror.fault(`/vulnrichment/raw/${third}/${path}`, undefined)
              const [recovered] = yield* syncSources(["vulnrichment"], OPTIONS)
              assert.deepStrictEqual([recovered!.status, recovered!.changed], ["updated", 1], JSON.stringify(recovered))
              assert.strictEqual((yield* cursors.get("vulnrichment"))!.cursor.lastDelta, third)
            })
          ),
        { timeout: 60_000 }
      )
    })
  }
)
