import { afterAll, assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { gzipSync } from "node:zlib"
import { ingest } from "../../src/ingest/Ingest.ts"
import type { IngestEvent, IngestRequest, IngestSummary } from "../../src/ingest/IngestEvents.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SqlBackends } from "../support/database.ts"
import { StubFormats } from "./stubFormats.ts"

const dir = mkdtempSync(join(tmpdir(), "vdb-ingest-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
mkdirSync(join(dir, "sources/osv/nested"), { recursive: true })
mkdirSync(join(dir, "sources/sploitscan"), { recursive: true })
writeFileSync(join(dir, "README.md"), "not data")
writeFileSync(join(dir, "sources/sploitscan/x.json"), "{}")
writeFileSync(
  join(dir, "sources/osv/a.ndjson"),
  ["{\"id\":\"PYSEC-1\",\"aliases\":[\"CVE-2020-0001\"]}", "{oops", "{\"id\":\"PYSEC-2\"}"].join("\n")
)
writeFileSync(
  join(dir, "sources/osv/nested/b.ndjson.gz"),
  gzipSync(
    ["{\"id\":\"PYSEC-3\"}", "{\"id\":\"PYSEC-1\",\"other\":1}", "{\"id\":\"PYSEC-4\",\"fail\":true}"].join("\n")
  )
)

const run = (request: IngestRequest) =>
  ingest(request, { batchSize: 2, formats: StubFormats }).pipe(Stream.runCollect, Effect.map((events) => [...events]))

const summaryOf = (events: ReadonlyArray<IngestEvent>) => events.at(-1) as IngestSummary

const backends = [
  ...SqlBackends.map(({ layer, name }) => ({ name, layer: VulnStore.layer.pipe(Layer.provideMerge(layer)) })),
  { name: "memory", layer: VulnStore.layerMemory }
]

describe.each(backends)("ingest pipeline ($name)", ({ layer: backend }) => {
  layer(backend, { excludeTestServices: true })((it) => {
    it.effect("rejects an unknown source or unreadable path before writing anything", () =>
      Effect.gen(function*() {
        const unknown = yield* Effect.flip(run({ source: "nope", paths: [dir] }))
        assert.strictEqual(unknown.reason._tag, "UnknownSource")
        const missing = yield* Effect.flip(
          run({ source: "osv", paths: [join(dir, "sources/osv"), join(dir, "missing")] })
        )
        assert.strictEqual(missing.reason._tag, "UnreadablePath")
        assert.include(missing.message, "missing")
        const store = yield* VulnStore
        assert.deepStrictEqual((yield* store.lookup("PYSEC-1")).records, [])
      }))

    it.effect("walks trees and .gz, reports problems with positions, and a re-run is all unchanged", () =>
      Effect.gen(function*() {
        const first = yield* run({ paths: [], all: dir })
        const summary = summaryOf(first)
        assert.strictEqual(summary._tag, "Summary")
        assert.deepStrictEqual(
          [
            summary.files,
            summary.items,
            summary.inserted,
            summary.updated,
            summary.unchanged,
            summary.duplicates,
            summary.normalised,
            summary.skipped
          ],
          [2, 6, 4, 0, 0, 1, 3, 2]
        )
        assert.strictEqual(summary.conflicting, 1, "PYSEC-1 again with other content: the first is kept")
        assert.deepStrictEqual(summary.conflicts, [{
          source: "osv",
          identifier: "PYSEC-1",
          kept: "sources/osv/a.ndjson:1",
          dropped: "sources/osv/nested/b.ndjson.gz:2"
        }])
        assert.deepStrictEqual(summary.skippedReasons, { "malformed JSON": 1, "impossible date": 1 })
        assert.deepStrictEqual(summary.ignoredFiles.map((f) => f.path), ["README.md", "sources/sploitscan/x.json"])
        const problems = first.filter((e) => e._tag === "Problem").map((e) =>
          e._tag === "Problem" && `${e.position} ${e.reason}`
        )
        assert.deepStrictEqual(problems, [
          "sources/osv/a.ndjson:2 malformed JSON",
          "sources/osv/nested/b.ndjson.gz:3 impossible date"
        ])
        assert.isAtLeast(first.filter((e) => e._tag === "Progress").length, 2)

        const store = yield* VulnStore
        const found = yield* store.lookup("CVE-2020-0001")
        assert.deepStrictEqual(found.aliases, ["PYSEC-1"])
        assert.deepStrictEqual(found.records.map((r) => r.identifier), ["PYSEC-1"])
        const failing = yield* store.lookup("PYSEC-4")
        assert.deepStrictEqual(failing.records.map((r) => [r.source, r.record]), [["osv", null]])
        assert.deepStrictEqual((yield* store.failed()).map((f) => f.identifier), ["PYSEC-4"])

        const second = summaryOf(yield* run({ source: "osv", paths: [join(dir, "sources/osv")] }))
        assert.deepStrictEqual(
          [second.inserted, second.updated, second.unchanged, second.duplicates, second.normalised, second.skipped],
          [0, 0, 4, 1, 0, 2]
        )
      }))
  })
})
