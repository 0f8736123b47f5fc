// `npm run bench -- ingest [COUNT] [WORKERS] [--readers N] [--reader-rate R]`: ingests ../shared/data and a
// generated set of COUNT (default 300 000) real records cloned under new
// identifiers into a throwaway PostgreSQL database, then re-ingests the
// generated set (all unchanged). Baseline, same run, same driver and rows: a
// bare multi-row INSERT of the generated items' raw text into a table with
// only a primary key (no parsing, hashing, normalising, indexes or second phase).
// While the generated set is ingested, N readers (default 4; 0 for none) in
// their own process call `GET /v1/vuln/{id}`, R requests a second in all
// (default 100; 0 unpaced, a load test), on `bin/vdb serve api` over the
// same database, ids from the corpus ingested first: their latency and errors
// show whether the API keeps answering during a large ingest. With readers on,
// a second generated set of COUNT (other identifiers) then goes the way a user
// sends it, the readers still on: `bin/vdb ingest --all` to that server over
// its admin socket (the CLI reads the files and streams their bytes), timed by
// the CLI's summary. The readers' figures cover both sets.
// The store floor (`storeFloor`): the pipeline's database writes alone, for items read and
// normalised beforehand, in a database of its own holding what the generated set starts on
// (../shared/data); what an ingest on this machine cannot beat. Both it and the generated
// ingest report their CPU a record (this process, PostgreSQL, the machine; `cpuShare.ts`)
// against what the cores give a record at the target rate.
// Writes bench/results/ingest.json.
import { PgClient } from "@effect/sql-pg"
import { Effect, Fiber, Layer, Redacted, Stream } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient } from "effect/sql"
import { spawn } from "node:child_process"
import { hash as digest } from "node:crypto"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { PerformanceObserver } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import { layerPostgres } from "../src/db/Database.ts"
import { MigrationsLayer } from "../src/db/Migrations.ts"
import { detectSource, isItemProblem, normalise, readItems } from "../src/ingest/formats/index.ts"
import { ingest } from "../src/ingest/Ingest.ts"
import type { IngestSummary } from "../src/ingest/IngestEvents.ts"
import { defaultWorkers } from "../src/ingest/NormalisePool.ts"
import { planIngest } from "../src/ingest/SourceFiles.ts"
import { storedForm } from "../src/ingest/StoredForm.ts"
import { VulnStore } from "../src/vulns/VulnStore.ts"
import type { NormalisedItem, RawItem } from "../src/vulns/VulnStoreShapes.ts"
import { startBenchServer } from "./benchServer.ts"
import { readText } from "./corpusText.ts"
import {
  addSpent,
  cpuPerRecord,
  type CpuSample,
  cpuSample,
  type CpuSpent,
  cpuSpent,
  endedChildrenMicros,
  pidMicros
} from "./cpuShare.ts"
import { generateClones } from "./ingestClones.ts"
import { scratchDatabaseName } from "./scratchDatabase.ts"
import { forkReaders, readerOrganization } from "./vulnReaders.ts"

const ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
const DATA = fileURLToPath(new URL("../../shared/data", import.meta.url))
const RESULTS = fileURLToPath(new URL("./results/", import.meta.url))
const ROOT = fileURLToPath(new URL("../", import.meta.url))
const positional = process.argv.slice(2).filter((arg, i, all) => !arg.startsWith("--") && !all[i - 1]?.startsWith("--"))
const COUNT = Number(positional[0] ?? 300_000)
/** Normalising worker threads (default: the pipeline's own default; 0 = inline). */
const WORKERS = positional[1] === undefined ? undefined : Number(positional[1])
const READERS = (() => {
  const i = process.argv.indexOf("--readers")
  return i === -1 ? 4 : Number(process.argv[i + 1])
})()
/** Requests a second across all readers (0: as fast as they can, a load test rather than readers). */
const READER_RATE = (() => {
  const i = process.argv.indexOf("--reader-rate")
  return i === -1 ? 100 : Number(process.argv[i + 1])
})()
const BATCH = 2000
const TARGET_PER_SECOND = 10_000

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
  Effect.suspend(() => {
    const before = cpuSample()
    return ingest({ paths: [], all }, { batchSize: BATCH, ...(WORKERS === undefined ? {} : { workers: WORKERS }) })
      .pipe(
        Stream.runLast,
        Effect.map((last) => {
          if (last._tag !== "Some" || last.value._tag !== "Summary") {
            throw new Error("ingestion ended without a summary")
          }
          const cpu = cpuPerRecord(cpuSpent(before, cpuSample()), last.value.items, TARGET_PER_SECOND)
          return { ...figures(last.value), ...(cpu === undefined ? {} : { cpu }) }
        })
      )
  })

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

/** Items the store floor writes: enough for a steady rate. */
const FLOOR_COUNT = Number(process.env.BENCH_FLOOR_COUNT ?? Math.min(COUNT, 50_000))
/** Items the store floor prepares, then writes, at a time: five batches. */
const FLOOR_ROUND = 5 * BATCH

/**
 * The store floor: the pipeline's database writes alone. A generated set is read, hashed and
 * normalised beforehand, `FLOOR_ROUND` items at a time (untimed, records in the worker's stored
 * form); then the same `putRaw` and `putNormalised` calls go in batches of the same size with the
 * same overlap (phase 1 of later batches on other connections while phase 2 of the previous one
 * commits), the overlap starting again with each round. What it measures is the database, the
 * driver and the store's row building: an ingest cannot beat it on this machine, and the reading,
 * parsing and normalising it leaves out share the same cores. Its CPU a record says how much of
 * the cores' budget the writes alone take.
 */
const storeFloor = (dir: string) =>
  Effect.gen(function*() {
    const store = yield* VulnStore
    const plan = yield* planIngest({ paths: [], all: dir }, detectSource)
    function* preparedItems() {
      for (const file of plan.files) {
        for (const item of readItems(file.source, file.display, readText(file))) {
          if (isItemProblem(item)) continue
          const outputs = normalise(item)
          if (isItemProblem(outputs)) continue
          const hash = digest("sha256", item.raw, "base64url")
          yield {
            raw: { source: item.source, identifier: item.identifier, content: item.raw, hash } satisfies RawItem,
            outputs: outputs.map(storedForm)
          }
        }
      }
    }
    // Pauses are delivered later than they happen: kept with their start, counted if in a timed window.
    const pauses: Array<{ readonly startTime: number; readonly duration: number }> = []
    const windows: Array<readonly [number, number]> = []
    const gc = new PerformanceObserver((list) => {
      pauses.push(...list.getEntries())
    })
    gc.observe({ entryTypes: ["gc"] })
    let items = 0
    let seconds = 0
    let spent: CpuSpent | undefined
    const source = preparedItems()
    while (true) {
      // Prepared a round at a time (untimed), so the process holds no more of them than an ingest
      // holds batches; held all at once, they made its garbage collection the largest part of its CPU.
      const round: Array<{ readonly raw: RawItem; readonly outputs: NormalisedItem["outputs"] }> = []
      while (round.length < FLOOR_ROUND) {
        const next = source.next()
        if (next.done === true) break
        round.push(next.value)
      }
      if (round.length === 0) break
      const before = cpuSample()
      const started = performance.now()
      const inFlight: Array<Fiber.Fiber<void>> = []
      for (let from = 0; from < round.length; from += BATCH) {
        const chunk = round.slice(from, from + BATCH)
        if (inFlight.length >= 3) yield* Fiber.join(inFlight.shift()!)
        const prior = inFlight.at(-1)
        inFlight.push(
          yield* Effect.forkChild(Effect.gen(function*() {
            const results = yield* store.putRaw(chunk.map((c) => c.raw))
            if (prior !== undefined) yield* Fiber.join(prior)
            yield* store.putNormalised(
              chunk.map((c, n) => ({
                source: c.raw.source,
                identifier: c.raw.identifier,
                hash: c.raw.hash,
                outputs: c.outputs,
                fresh: results[n]!.outcome === "inserted"
              })),
              []
            )
          }))
        )
      }
      while (inFlight.length > 0) yield* Fiber.join(inFlight.shift()!)
      const ended = performance.now()
      windows.push([started, ended])
      seconds += (ended - started) / 1000
      spent = addSpent(spent, cpuSpent(before, cpuSample()))
      items += round.length
    }
    pauses.push(...gc.takeRecords())
    gc.disconnect()
    const gcMs = pauses
      .filter((pause) => windows.some(([from, to]) => pause.startTime >= from && pause.startTime < to))
      .reduce((sum, pause) => sum + pause.duration, 0)
    const shares = cpuPerRecord(spent, items, TARGET_PER_SECOND)
    return {
      items,
      seconds: Math.round(seconds * 1000) / 1000,
      perSecond: Math.round(items / seconds),
      /** This process's CPU a record while writing (the driver's encoding, row building); the database's is the rest. */
      clientMicrosPerItem: shares?.processMicros,
      /** Of which pauses of this process's garbage collector. */
      gcMicrosPerItem: Math.round((gcMs * 1000) / items),
      ...(shares === undefined ? {} : { cpu: shares })
    }
  })

interface PartiesCpu {
  readonly server: number | undefined
  readonly cli: number | undefined
  readonly sample: CpuSample | undefined
}

/** CPU a record of an ingest through the server, by party; the machine's figure covers the readers too. */
type ThroughServerCpu = Omit<NonNullable<ReturnType<typeof cpuPerRecord>>, "processMicros"> & {
  readonly serverMicros: number
  readonly cliMicros: number
}

const throughServerCpu = (before: PartiesCpu, after: PartiesCpu, records: number): ThroughServerCpu | undefined => {
  const shares = cpuPerRecord(cpuSpent(before.sample, after.sample), records, TARGET_PER_SECOND)
  if (
    shares === undefined || before.server === undefined || after.server === undefined || before.cli === undefined ||
    after.cli === undefined
  ) {
    return undefined
  }
  // `processMicros` would be this bench's own process, which only waits meanwhile: the parties replace it.
  const { processMicros: _, ...rest } = shares
  return {
    serverMicros: Math.round((after.server - before.server) / records),
    cliMicros: Math.round((after.cli - before.cli) / records),
    ...rest
  }
}

/**
 * `bin/vdb serve api` on the bench's database, an organization with limits 0,
 * and the reader process; `stop()` ends the readers and returns their figures.
 */
const startReaders = (url: string) =>
  Effect.gen(function*() {
    // Apart from the ingested folder: the server's data directory holds its admin socket.
    const work = mkdtempSync(join(tmpdir(), "vdb-bench-readers-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(work, { recursive: true, force: true })))
    const sql = yield* SqlClient.SqlClient
    const ids = (yield* sql<{ identifier: string }>`SELECT DISTINCT identifier FROM vuln_records
      WHERE identifier LIKE 'CVE-%' ORDER BY identifier LIMIT 500`).map((row) => row.identifier)
    if (ids.length === 0) throw new Error("no CVE records to read")
    const idsFile = join(work, "reader-ids.json")
    writeFileSync(idsFile, JSON.stringify(ids))
    const { masterKey, org } = yield* readerOrganization
    const { close, port, server } = yield* startBenchServer({
      DATABASE_URL: url,
      VDB_MASTER_KEY: Buffer.from(masterKey).toString("base64"),
      VDB_DATA_DIR: join(work, "data")
    }, work)
    /**
     * `bin/vdb ingest --all dir --json` against this server, as a user runs it: its summary, and
     * the CPU a record of each party (the server process, the CLI, PostgreSQL, the machine).
     */
    const ingestThroughServer = (dir: string) =>
      Effect.promise(() =>
        new Promise<ReturnType<typeof figures> & { readonly cpu?: ThroughServerCpu }>((resolveSummary, reject) => {
          const before = { server: pidMicros(server.pid), cli: endedChildrenMicros(), sample: cpuSample() }
          const cli = spawn(process.execPath, [
            "--disable-warning=ExperimentalWarning",
            join(ROOT, "src/cli/main.ts"),
            "ingest",
            "--all",
            dir,
            "--json"
          ], {
            env: {
              PATH: process.env.PATH ?? "",
              HOME: process.env.HOME ?? "/tmp",
              DATABASE_URL: url,
              VDB_MASTER_KEY: Buffer.from(masterKey).toString("base64"),
              VDB_DATA_DIR: join(work, "data")
            },
            stdio: ["ignore", "pipe", "inherit"]
          })
          let out = ""
          cli.stdout.setEncoding("utf8").on("data", (text: string) => (out += text))
          cli.once("exit", (code) => {
            // Progress lines, then the summary as one indented document.
            const summary = code === 0
              ? JSON.parse(out.slice(out.lastIndexOf("\n{\n") + 1)) as IngestSummary
              : undefined
            if (summary === undefined) return reject(new Error(`bin/vdb ingest exited with ${code}`))
            const cpu = throughServerCpu(before, {
              server: pidMicros(server.pid),
              cli: endedChildrenMicros(),
              sample: cpuSample()
            }, summary.items)
            resolveSummary({ ...figures(summary), ...(cpu === undefined ? {} : { cpu }) })
          })
        })
      )
    const readers = yield* Effect.promise(() => forkReaders(port, org.apiKey, idsFile, READERS, READER_RATE))
    return {
      ingestThroughServer,
      stop: () => Effect.promise(readers.stop),
      // The re-ingest and the baseline run without the API server's share of the cores.
      close
    }
  })

// ---------------------------------------------------------------- ingestion

const program = Effect.gen(function*() {
  const work = mkdtempSync(join(tmpdir(), "vdb-bench-ingest-"))
  const name = scratchDatabaseName("ingest")
  yield* Effect.addFinalizer(() =>
    Effect.andThen(
      admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
      Effect.sync(() => rmSync(work, { recursive: true, force: true }))
    )
  )
  console.error(`generating ${COUNT} cloned records in ${work} …`)
  const generated = yield* generateClones(DATA, work, COUNT)
  yield* admin(`CREATE DATABASE ${name}`)
  const url = `postgres://postgres@127.0.0.1:5432/${name}`
  const Db = Layer.provideMerge(MigrationsLayer, layerPostgres(Redacted.make(url), 4))
  const Store = VulnStore.layer.pipe(Layer.provideMerge(Db))
  const floorDir = mkdtempSync(join(tmpdir(), "vdb-bench-ingest-floor-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(floorDir, { recursive: true, force: true })))
  yield* generateClones(DATA, floorDir, FLOOR_COUNT, 900)
  // First, in a database of its own holding what the generated set starts on: the writes meet
  // indexes of the same size, and no autovacuum of the large sets below runs meanwhile.
  const floorName = scratchDatabaseName("floor")
  yield* Effect.addFinalizer(() => admin(`DROP DATABASE IF EXISTS ${floorName} WITH (FORCE)`))
  yield* admin(`CREATE DATABASE ${floorName}`)
  const FloorStore = VulnStore.layer.pipe(
    Layer.provideMerge(
      Layer.provideMerge(
        MigrationsLayer,
        layerPostgres(Redacted.make(`postgres://postgres@127.0.0.1:5432/${floorName}`), 4)
      )
    )
  )
  console.error(
    `store floor: the pipeline's writes alone for ${FLOOR_COUNT} items read and normalised beforehand, on a database holding ../shared/data …`
  )
  const floor = yield* Effect.andThen(runIngest(DATA), storeFloor(floorDir)).pipe(Effect.provide(FloorStore))
  console.error(`  ${JSON.stringify(floor)}`)
  // Gone before the runs below: its autovacuum would take their cores.
  yield* admin(`DROP DATABASE IF EXISTS ${floorName} WITH (FORCE)`)
  return yield* Effect.gen(function*() {
    console.error("ingesting ../shared/data …")
    const corpus = yield* runIngest(DATA)
    console.error(`  ${JSON.stringify(corpus)}`)
    const readers = READERS > 0 ? yield* startReaders(url) : undefined
    console.error(
      `ingesting the generated set (${generated.count} items)${readers ? `, ${READERS} readers on /vuln` : ""} …`
    )
    const large = yield* runIngest(work)
    console.error(`  ${JSON.stringify(large)}`)
    let throughServer: (ReturnType<typeof figures> & { readonly cpu?: ThroughServerCpu }) | undefined
    if (readers) {
      // Apart from the first set's folder, which the re-ingest reads again.
      const second = mkdtempSync(join(tmpdir(), "vdb-bench-ingest-second-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(second, { recursive: true, force: true })))
      yield* generateClones(DATA, second, COUNT, 500)
      console.error(
        `ingesting a second generated set (${COUNT} items) with bin/vdb ingest through the server, readers on …`
      )
      throughServer = yield* readers.ingestThroughServer(second)
      console.error(`  ${JSON.stringify(throughServer)}`)
    }
    const readerStats = readers ? yield* readers.stop() : undefined
    if (readerStats) console.error(`  readers: ${JSON.stringify(readerStats)}`)
    if (readers) yield* readers.close()
    console.error("re-ingesting the generated set …")
    const again = yield* runIngest(work)
    console.error(`  ${JSON.stringify(again)}`)
    console.error("baseline: bare INSERT of the same rows …")
    const base = yield* baseline(generated.files)
    console.error(`  ${JSON.stringify(base)}`)
    const result = {
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model ?? "unknown" },
      loadAverage: loadavg().map((n) => Math.round(n * 100) / 100),
      batchSize: BATCH,
      workers: WORKERS ?? defaultWorkers(),
      clonedFrom: generated.originals,
      corpus,
      generated: large,
      ...(readerStats
        ? { readers: { during: "both generated sets", endpoint: "GET /v1/vuln/{id}", ...readerStats } }
        : {}),
      // What a user gets: the CLI reading the files and streaming them over the admin socket to `bin/vdb serve api`.
      ...(throughServer ? { throughServer: { command: "bin/vdb ingest --all", ...throughServer } } : {}),
      reingest: again,
      storeFloor: floor,
      baseline: base,
      ratioToBaseline: {
        generated: Number((large.perSecond / base.perSecond).toFixed(3)),
        reingest: Number((again.perSecond / base.perSecond).toFixed(3))
      },
      target: TARGET_PER_SECOND,
      met: large.perSecond >= TARGET_PER_SECOND && corpus.skipped === 0 && again.inserted + again.updated === 0 &&
        (readerStats === undefined || readerStats.errors === 0)
    }
    mkdirSync(RESULTS, { recursive: true })
    writeFileSync(join(RESULTS, "ingest.json"), `${JSON.stringify(result, null, 2)}\n`)
    console.log(JSON.stringify(result, null, 2))
  }).pipe(Effect.provide(Store))
})

await Effect.runPromise(Effect.scoped(program))
