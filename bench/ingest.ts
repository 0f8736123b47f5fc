// `npm run bench -- ingest [COUNT] [WORKERS]`: ingests ../shared/data and a generated set
// of COUNT (default 300 000) real records cloned under new identifiers into a
// throwaway PostgreSQL database, then re-ingests the generated set (all
// unchanged). Baseline, same run, same driver and rows: a bare multi-row
// INSERT of the generated items' raw text into a table with only a primary
// key (no parsing, hashing, normalising, indexes or second phase).
// Writes bench/results/ingest.json.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted, Stream } from "effect"
import { SqlClient } from "effect/sql"
import * as Reactivity from "effect/reactivity/Reactivity"
import { layerPostgres } from "../src/db/Database.ts"
import { MigrationsLayer } from "../src/db/Migrations.ts"
import { ingest } from "../src/ingest/Ingest.ts"
import { defaultWorkers } from "../src/ingest/NormalisePool.ts"
import type { IngestSummary } from "../src/ingest/IngestEvents.ts"
import { VulnStore } from "../src/vulns/VulnStore.ts"
import { generateClones } from "./ingestClones.ts"

const ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
const DATA = fileURLToPath(new URL("../../shared/data", import.meta.url))
const RESULTS = fileURLToPath(new URL("./results/", import.meta.url))
const COUNT = Number(process.argv[2] ?? 300_000)
/** Normalising worker threads (default: the pipeline's own default; 0 = inline). */
const WORKERS = process.argv[3] === undefined ? undefined : Number(process.argv[3])
const BATCH = 2000
const TARGET_PER_SECOND = 5000

const admin = (statement: string) =>
  Effect.scoped(Effect.gen(function*() {
    const c = yield* PgClient.make({ url: Redacted.make(ADMIN_URL), maxConnections: 1 })
    yield* c.unsafe(statement)
  })).pipe(Effect.provide(Reactivity.layer), Effect.orDie)

const figures = (s: IngestSummary) => ({
  items: s.items,
  inserted: s.inserted,
  updated: s.updated,
  unchanged: s.unchanged,
  duplicates: s.duplicates,
  skipped: s.skipped,
  seconds: s.elapsedMs / 1000,
  perSecond: s.perSecond
})

const runIngest = (all: string) =>
  ingest({ paths: [], all }, { batchSize: BATCH, ...(WORKERS === undefined ? {} : { workers: WORKERS }) }).pipe(
    Stream.runLast,
    Effect.map((last) => {
      if (last._tag !== "Some" || last.value._tag !== "Summary") throw new Error("ingestion ended without a summary")
      return figures(last.value)
    })
  )

const baseline = (files: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const lines = files.flatMap((f) => readFileSync(f, "utf8").split("\n").filter((l) => l !== ""))
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE bench_baseline (id integer PRIMARY KEY, content text NOT NULL)`
    const started = performance.now()
    for (let from = 0; from < lines.length; from += BATCH) {
      const rows = lines.slice(from, from + BATCH)
      yield* sql`INSERT INTO bench_baseline (id, content)
        SELECT * FROM unnest(${rows.map((_, i) => from + i)}::int[], ${rows}::text[])`
    }
    const seconds = (performance.now() - started) / 1000
    return { rows: lines.length, seconds, perSecond: Math.round(lines.length / seconds) }
  })

const program = Effect.gen(function*() {
  const work = mkdtempSync(join(tmpdir(), "vdb-bench-ingest-"))
  const name = `vdb_bench_ingest_${Date.now().toString(36)}`
  yield* Effect.addFinalizer(() =>
    Effect.andThen(admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`), Effect.sync(() => rmSync(work, { recursive: true, force: true })))
  )
  console.error(`generating ${COUNT} cloned records in ${work} …`)
  const generated = yield* generateClones(DATA, work, COUNT)
  yield* admin(`CREATE DATABASE ${name}`)
  const url = `postgres://postgres@127.0.0.1:5432/${name}`
  const Db = Layer.provideMerge(MigrationsLayer, layerPostgres(Redacted.make(url), 4))
  const Store = VulnStore.layer.pipe(Layer.provideMerge(Db))
  return yield* Effect.gen(function*() {
    console.error("ingesting ../shared/data …")
    const corpus = yield* runIngest(DATA)
    console.error(`  ${JSON.stringify(corpus)}`)
    console.error(`ingesting the generated set (${generated.count} items) …`)
    const large = yield* runIngest(work)
    console.error(`  ${JSON.stringify(large)}`)
    console.error("re-ingesting the generated set …")
    const again = yield* runIngest(work)
    console.error(`  ${JSON.stringify(again)}`)
    console.error("baseline: bare INSERT of the same rows …")
    const base = yield* baseline(generated.files)
    console.error(`  ${JSON.stringify(base)}`)
    const result = {
      date: new Date().toISOString(),
      batchSize: BATCH,
      workers: WORKERS ?? defaultWorkers(),
      clonedFrom: generated.originals,
      corpus,
      generated: large,
      reingest: again,
      baseline: base,
      ratioToBaseline: {
        generated: Number((large.perSecond / base.perSecond).toFixed(3)),
        reingest: Number((again.perSecond / base.perSecond).toFixed(3))
      },
      target: TARGET_PER_SECOND,
      met: large.perSecond >= TARGET_PER_SECOND && corpus.skipped === 0 && again.inserted + again.updated === 0
    }
    mkdirSync(RESULTS, { recursive: true })
    writeFileSync(join(RESULTS, "ingest.json"), `${JSON.stringify(result, null, 2)}\n`)
    console.log(JSON.stringify(result, null, 2))
  }).pipe(Effect.provide(Store))
})

await Effect.runPromise(Effect.scoped(program))
