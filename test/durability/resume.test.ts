import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { resumePending } from "../../src/ingest/NormaliseResume.ts"
import { buildSummary } from "../../src/vulns/Summary.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import type { RawItem } from "../../src/vulns/VulnStoreShapes.ts"
import { SqlBackends } from "../support/database.ts"

const backends = [
  ...SqlBackends.map(({ layer, name }) => ({ name, layer: VulnStore.layer.pipe(Layer.provideMerge(layer)) })),
  { name: "memory", layer: VulnStore.layerMemory }
]

const fixture = (name: string) =>
  JSON.stringify(
    JSON.parse(
      readFileSync(fileURLToPath(new URL(`../fixtures/data/sources/mitre/${name}.json`, import.meta.url)), "utf8")
    )
  )

/** As phase 1 stores it: the item's compact JSON. */
const raw = (identifier: string, content: string): RawItem => ({
  source: "mitre",
  identifier,
  content,
  hash: `h:${identifier}:${content.length}`
})

const LOG4SHELL = "CVE-2021-44228"

const sourcesOf = (store: VulnStore["Service"], id: string) =>
  Effect.map(store.lookup(id, { bodies: false }), (lookup) => buildSummary(id, lookup)?.sources)

describe.each(backends)("resuming phase 2 at start ($name)", ({ layer: backend }) => {
  layer(backend, { excludeTestServices: true })((it) => {
    it.effect(
      "normalises raw items an interrupted ingestion left, shown as processing until then",
      () =>
        Effect.gen(function*() {
          const store = yield* VulnStore
          const item = raw(LOG4SHELL, fixture(LOG4SHELL))
          const broken = raw("CVE-2000-0001", "{\"not\":\"a cve record\"}")
          const alreadyFailed = raw("CVE-2000-0002", "{\"failed\":true}")
          // Phase 1 committed, then the server died before phase 2.
          yield* store.putRaw([item, broken, alreadyFailed])
          yield* store.putNormalised([], [{ ...alreadyFailed, position: "f.json", reason: "bad" }])

          assert.deepStrictEqual(yield* sourcesOf(store, LOG4SHELL), [{ name: "mitre", processing: true }])
          assert.deepStrictEqual((yield* store.pendingRaw(undefined, 10)).map((r) => r.identifier), [
            "CVE-2000-0001",
            LOG4SHELL
          ])

          // Pages of one item: the keyset walk visits each pending item once.
          assert.strictEqual(yield* resumePending({ pageSize: 1 }), 2)

          assert.deepStrictEqual(yield* sourcesOf(store, LOG4SHELL), [{ name: "mitre", processing: false }])
          const served = yield* store.lookup(LOG4SHELL, { recordsOnly: true })
          assert.strictEqual(served.records.length, 1)
          assert.strictEqual(
            (served.records[0]!.record as { cveMetadata: { cveId: string } }).cveMetadata.cveId,
            LOG4SHELL
          )
          // The broken item is now a recorded failure (listed by `ingest --failed`), no longer pending.
          const failed = (yield* store.failed()).map((f) => f.identifier)
          assert.includeMembers(failed, ["CVE-2000-0001", "CVE-2000-0002"])
          assert.deepStrictEqual(yield* store.pendingRaw(undefined, 10), [])
          assert.strictEqual(yield* resumePending(), 0)
        }),
      { timeout: 30_000 }
    )
  })
})
