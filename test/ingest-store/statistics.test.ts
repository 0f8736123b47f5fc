import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { fileURLToPath } from "node:url"
import { ingest } from "../../src/ingest/Ingest.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SqlBackends } from "../support/database.ts"

const DATA = fileURLToPath(new URL("../fixtures/data", import.meta.url))

/** Store tables the planner has statistics for. */
const analysed = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ tablename: string }>`SELECT DISTINCT tablename FROM pg_stats
    WHERE schemaname = current_schema() AND tablename IN ('vuln_raw', 'vuln_records', 'vuln_aliases') ORDER BY tablename`
  return rows.map((r) => r.tablename)
})

const ingestFixtures = (analyzeAfter: number) =>
  ingest({ paths: [], all: DATA }, { analyzeAfter, workers: 0 }).pipe(Stream.runDrain)

/** The most histogram bounds any column of `vuln_raw` got: the statistics target plus one, at most. */
const histogramBounds = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<
    { bounds: number | null }
  >`SELECT max(array_length(histogram_bounds::text::text[], 1))::int AS bounds
    FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'vuln_raw'`
  return rows[0]?.bounds ?? 0
})

describe.each(SqlBackends)("store statistics after an ingest ($name)", ({ layer: backend, name }) => {
  layer(VulnStore.layer.pipe(Layer.provideMerge(backend)), { excludeTestServices: true })((it) => {
    it.effect("a run past `analyzeAfter` leaves the planner statistics of the store's tables", () =>
      Effect.gen(function*() {
        // 461 items: past ten times 10, so once on the way and once at the end.
        yield* ingestFixtures(10)
        // (What the statistics change shows only on large tables: docs/ingest.md, "Statistics".)
        assert.deepStrictEqual(yield* analysed, ["vuln_aliases", "vuln_raw", "vuln_records"])
        // The embedded database analyses a tenth of the sample (it runs on the server's thread); PostgreSQL the default.
        const bounds = yield* histogramBounds
        if (name === "pglite") assert.isAtMost(bounds, 11)
        else assert.isAbove(bounds, 11)
      }))
  })
})

// The embedded database has no autovacuum: without the ingest's ANALYZE its tables never get statistics.
describe("store statistics after a small ingest (pglite)", () => {
  layer(VulnStore.layer.pipe(Layer.provideMerge(SqlBackends[1].layer)), { excludeTestServices: true })((it) => {
    it.effect("a run under `analyzeAfter` leaves none", () =>
      Effect.gen(function*() {
        yield* ingestFixtures(100_000)
        assert.deepStrictEqual(yield* analysed, [])
      }))
  })
})
