// `npm run bench -- ingest-lookup [SECONDS]`: `VulnStore.lookup` (the API's
// hot path for /v1/info and /v1/vuln) against a bare single-row fetch of a
// stored record, over ../shared/data ingested into a throwaway PostgreSQL
// database. Each figure: lookups/s with 8 concurrent callers on a 4-connection
// pool, cycling through the CVE ids of manifest.json. "info" uses what /info
// reads (no record body); "vuln" also serialises the records as /vuln does.
// Writes bench/results/ingest-lookup.json.
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted, Stream } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient } from "effect/sql"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { layerPostgres } from "../src/db/Database.ts"
import { MigrationsLayer } from "../src/db/Migrations.ts"
import { ingest } from "../src/ingest/Ingest.ts"
import { VulnStore } from "../src/vulns/VulnStore.ts"
import { scratchDatabaseName } from "./scratchDatabase.ts"

const ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
const DATA = fileURLToPath(new URL("../../shared/data", import.meta.url))
const RESULTS = fileURLToPath(new URL("./results/", import.meta.url))
const SECONDS = Number(process.argv[2] ?? 5)
const CALLERS = 8

const admin = (statement: string) =>
  Effect.scoped(Effect.gen(function*() {
    const c = yield* PgClient.make({ url: Redacted.make(ADMIN_URL), maxConnections: 1 })
    yield* c.unsafe(statement)
  })).pipe(Effect.provide(Reactivity.layer), Effect.orDie)

const ids: ReadonlyArray<string> = Object.keys(JSON.parse(readFileSync(join(DATA, "manifest.json"), "utf8")).ids)
  .filter((id) => id.startsWith("CVE-"))

/** Calls `f` from CALLERS fibers for SECONDS; returns calls per second. */
const measure = <A>(f: (id: string) => Effect.Effect<A>) =>
  Effect.gen(function*() {
    // Warm-up: plans, connections, JIT.
    for (const id of ids) yield* f(id)
    const until = performance.now() + SECONDS * 1000
    let calls = 0
    const caller = (offset: number) =>
      Effect.gen(function*() {
        for (let n = offset; performance.now() < until; n++) {
          yield* f(ids[n % ids.length]!)
          calls++
        }
      })
    const started = performance.now()
    yield* Effect.all(Array.from({ length: CALLERS }, (_, k) => caller(k * 7)), { concurrency: "unbounded" })
    return Math.round(calls / ((performance.now() - started) / 1000))
  })

const program = Effect.gen(function*() {
  const name = scratchDatabaseName("lookup")
  yield* Effect.addFinalizer(() => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  yield* admin(`CREATE DATABASE ${name}`)
  const url = `postgres://postgres@127.0.0.1:5432/${name}`
  const Store = VulnStore.layer.pipe(
    Layer.provideMerge(Layer.provideMerge(MigrationsLayer, layerPostgres(Redacted.make(url), 4)))
  )
  return yield* Effect.gen(function*() {
    console.error("ingesting ../shared/data …")
    yield* ingest({ paths: [], all: DATA }).pipe(Stream.runDrain)
    const sql = yield* SqlClient.SqlClient
    const store = yield* VulnStore
    yield* sql`ANALYZE`
    const bare = yield* measure((id) =>
      sql`SELECT record FROM vuln_records WHERE identifier = ${id} LIMIT 1`.pipe(Effect.orDie)
    )
    console.error(`bare single-row fetch: ${bare}/s`)
    const info = yield* measure((id) => Effect.map(store.lookup(id), (l) => l.records.length))
    console.error(`lookup (/info use): ${info}/s`)
    const keysOnly = yield* measure((id) => Effect.map(store.lookup(id, { bodies: false }), (l) => l.records.length))
    console.error(`lookup without bodies (/info with bodies: false): ${keysOnly}/s`)
    const vuln = yield* measure((id) =>
      Effect.map(store.lookup(id), (l) => {
        const parts = l.records.flatMap((r) => r.recordJson == null ? [] : [r.recordJson])
        return `[${parts.join(",")}]`.length
      })
    )
    console.error(`lookup + serialise (/vuln use): ${vuln}/s`)
    const result = {
      date: new Date().toISOString(),
      seconds: SECONDS,
      callers: CALLERS,
      ids: ids.length,
      perSecond: { bareFetch: bare, lookupInfo: info, lookupNoBodies: keysOnly, lookupVuln: vuln },
      ratioToBare: {
        info: Number((info / bare).toFixed(3)),
        noBodies: Number((keysOnly / bare).toFixed(3)),
        vuln: Number((vuln / bare).toFixed(3))
      }
    }
    mkdirSync(RESULTS, { recursive: true })
    writeFileSync(join(RESULTS, "ingest-lookup.json"), `${JSON.stringify(result, null, 2)}\n`)
    console.log(JSON.stringify(result, null, 2))
  }).pipe(Effect.provide(Store))
})

await Effect.runPromise(Effect.scoped(program))
