// `npm run bench -- renormalise [COUNT] [WORKERS]`: the re-normalisation migration 0620 asks for
// (it forgets that the record sources' items were normalised, and the start-up resume,
// `src/ingest/NormaliseResume.ts`, normalises them again from their stored text), timed on a copy
// of the query bench's kept database (`benchDatabase.ts`: ../shared/data and COUNT cloned records,
// default 1 000 000). WORKERS: normalising threads (default 1, what the server's start-up resume
// uses). Items/s, and the time a server of that size takes to have its package index complete.
// Writes bench/results/renormalise.json.
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { mkdirSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { layerPostgres } from "../src/db/Database.ts"
import { resumePending } from "../src/ingest/NormaliseResume.ts"
import { VulnStore } from "../src/vulns/VulnStore.ts"
import { benchDatabase, databaseUrl } from "./benchDatabase.ts"
import { psql, scratchDatabaseName } from "./scratchDatabase.ts"

const RESULTS = fileURLToPath(new URL("./results/", import.meta.url))
const COUNT = Number(process.argv[2] ?? 1_000_000)
const WORKERS = Number(process.argv[3] ?? 1)
const MIGRATION = fileURLToPath(new URL("../src/db/migrations/0620_package_index.sql", import.meta.url))

const program = Effect.gen(function*() {
  const kept = yield* benchDatabase("query", COUNT)
  const name = scratchDatabaseName("renormalise")
  yield* Effect.addFinalizer(() => Effect.promise(() => psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)))
  console.error(`copying ${kept} …`)
  yield* Effect.promise(() => psql(`CREATE DATABASE ${name} TEMPLATE ${kept}`))
  return yield* Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // The migration's own statement (its last), on the copy.
    const text = yield* Effect.promise(() => import("node:fs/promises").then((fs) => fs.readFile(MIGRATION, "utf8")))
    const forget = text.slice(text.lastIndexOf("DELETE FROM vuln_normalised"))
    const started = performance.now()
    yield* sql.unsafe(forget)
    const forgetMs = performance.now() - started
    const resumeStarted = performance.now()
    const items = yield* resumePending({ workers: WORKERS })
    const seconds = (performance.now() - resumeStarted) / 1000
    const rows = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM vuln_packages`
    const result = {
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model ?? "unknown" },
      loadAverage: loadavg().map((n) => Math.round(n * 100) / 100),
      records: COUNT,
      workers: WORKERS,
      forgetMs: Math.round(forgetMs),
      renormalised: { items, seconds: Math.round(seconds * 10) / 10, perSecond: Math.round(items / seconds) },
      packageIndexRows: Number(rows[0]!.n)
    }
    mkdirSync(RESULTS, { recursive: true })
    writeFileSync(join(RESULTS, "renormalise.json"), `${JSON.stringify(result, null, 2)}\n`)
    console.log(JSON.stringify(result, null, 2))
  }).pipe(Effect.provide(VulnStore.layer.pipe(Layer.provideMerge(layerPostgres(Redacted.make(databaseUrl(name)), 4)))))
})

await Effect.runPromise(Effect.scoped(program))
