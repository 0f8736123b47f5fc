import { afterAll, assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { chunksByChars, STATEMENT_CHARS } from "../../src/db/StatementChunks.ts"
import { ingest } from "../../src/ingest/Ingest.ts"
import type { IngestSummary } from "../../src/ingest/IngestEvents.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SqlBackends } from "../support/database.ts"
import { StubFormats } from "./stubFormats.ts"

const dir = mkdtempSync(join(tmpdir(), "vdb-batch-bounds-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
mkdirSync(join(dir, "osv"), { recursive: true })
// 20 records of the same length: batches of 2 are 10 batches of equal text.
const LINES = Array.from({ length: 20 }, (_, n) => JSON.stringify({ id: `PYSEC-${1000 + n}` }))
writeFileSync(join(dir, "osv/records.ndjson"), LINES.join("\n"))
const BATCH_CHARS = 2 * LINES[0]!.length

/**
 * A memory store that counts the batches between their raw phase and the end of their phase 2
 * (each batch is one `putRaw` and one `putNormalised`), phase 2 taking a few milliseconds so that
 * batches overlap when nothing holds them back.
 */
const countingStore = Effect.gen(function*() {
  const inner = yield* Effect.provide(VulnStore, VulnStore.layerMemory)
  const counts = { open: 0, max: 0 }
  const store = VulnStore.of({
    ...inner,
    putRaw: (items) =>
      Effect.suspend(() => {
        counts.open++
        counts.max = Math.max(counts.max, counts.open)
        return inner.putRaw(items)
      }),
    putNormalised: (done, failed) =>
      Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5))).pipe(
        Effect.andThen(inner.putNormalised(done, failed)),
        Effect.ensuring(Effect.sync(() => counts.open--))
      )
  })
  return { store, counts }
})

const ingestWith = (store: VulnStore["Service"], batchChars: number) =>
  ingest({ source: "osv", paths: [join(dir, "osv")] }, { batchSize: 2, formats: StubFormats, batchChars }).pipe(
    Stream.runCollect,
    Effect.map((events) => [...events].at(-1) as IngestSummary),
    Effect.provideService(VulnStore, store)
  )

describe("batches in flight", () => {
  it.live("hold at most the process's budget of raw text: reading waits for a batch to be written", () =>
    Effect.gen(function*() {
      const { counts, store } = yield* countingStore
      const summary = yield* ingestWith(store, BATCH_CHARS)
      assert.strictEqual(summary.inserted, 20)
      assert.strictEqual(summary.normalised, 20)
      assert.strictEqual(counts.max, 1, "a budget of one batch's text: one batch between its raw phase and phase 2")
      assert.strictEqual(counts.open, 0)
    }))

  it.live("overlap up to the run's depth under a budget that does not bind (the bound above is the budget's)", () =>
    Effect.gen(function*() {
      const { counts, store } = yield* countingStore
      const summary = yield* ingestWith(store, 100 * BATCH_CHARS)
      assert.strictEqual(summary.normalised, 20)
      assert.isAbove(counts.max, 1)
    }))

  it.live("a budget smaller than one batch still lets every batch through, one at a time", () =>
    Effect.gen(function*() {
      const { counts, store } = yield* countingStore
      const summary = yield* ingestWith(store, 1)
      assert.strictEqual(summary.normalised, 20)
      assert.strictEqual(counts.max, 1)
    }))
})

describe("chunksByChars", () => {
  it("keeps the rows in order, each run within the limit, a bigger row alone", () => {
    const rows = [3, 4, 2, 9, 1, 1, 5]
    const chunks = chunksByChars(rows, (n) => n, 6)
    assert.deepStrictEqual(chunks, [[3], [4, 2], [9], [1, 1], [5]])
    assert.deepStrictEqual(chunks.flat(), rows)
    assert.deepStrictEqual(chunksByChars([], (n: number) => n, 6), [])
    assert.deepStrictEqual(chunksByChars([1, 2], (n) => n, 6), [[1, 2]])
  })
})

const backends = SqlBackends.map(({ layer, name }) => ({
  name,
  layer: VulnStore.layer.pipe(Layer.provideMerge(layer))
}))

describe.each(backends)("a batch over one statement's text ($name)", ({ layer: backend }) => {
  layer(backend, { excludeTestServices: true })((it) => {
    it.effect("is written whole, in several statements", () =>
      Effect.gen(function*() {
        const store = yield* VulnStore
        const sql = yield* SqlClient.SqlClient
        // Five records of 40 % of a statement's text each: three statements.
        const content = (n: number) => JSON.stringify({ id: `BIG-${n}`, pad: "x".repeat(STATEMENT_CHARS * 0.4) })
        const items = Array.from({ length: 5 }, (_, n) => ({
          source: "osv",
          identifier: `BIG-${n}`,
          content: content(n),
          hash: `h${n}`
        }))
        assert.strictEqual(chunksByChars(items, (i) => i.content.length).length, 3)
        const results = yield* store.putRaw(items)
        assert.deepStrictEqual(results.map((r) => r.outcome), Array(5).fill("inserted"))
        const rows = yield* sql<{ identifier: string; length: number }>`
          SELECT identifier, length(content) AS length FROM vuln_raw WHERE identifier LIKE 'BIG-%'
          ORDER BY identifier`.pipe(Effect.orDie)
        assert.deepStrictEqual(
          rows.map((r) => [r.identifier, Number(r.length)]),
          items.map((i) => [i.identifier, i.content.length])
        )
      }))
  })
})
