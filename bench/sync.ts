// `npm run bench -- sync [COUNT] [--sequential] [--readers N] [--reader-rate R]` (`make bench BENCH="sync 200000"`): the live
// feeds (issue 34) against a loopback feed mirror at real size (`syncMirror.ts`), COUNT records in all
// (default 1 300 000: 300 k CVE List records in the baseline archive, 300 k NVD API 2.0 records, 400 k
// OSV records in all.zip, 300 k EPSS rows; generated from the recorded samples and kept under .cache/,
// `syncFeedData.ts`). On a throwaway PostgreSQL database holding ../shared/data, `bin/vdb serve api` as
// deployed with `VDB_SYNC=off` and the mirror as every synced feed's URL (loopback only); `bin/vdb sync`
// over its admin socket:
// - the first sync, the four sources at once as `serve`'s schedule runs them (`--sequential`: one after
//   another, EPSS, NVD, CVE List, OSV): records/s over the whole (target >= 10,000), and each source's;
//   NVD with an API key, so at its published keyed rate (50 requests per 30 s);
// - the server's RSS above idle (idle: before the sync, the readers on), sampled throughout (target <= 400 MB);
// - the server during it (`serverSamples.ts`): event-loop stalls, pool waits, heaps; `--timeline FILE` keeps every sample;
// - N readers (default 4) of `GET /v1/vuln/{id}` at R requests/s in all (default 100) during the first
//   sync: p99 (target <= 50 ms);
// - after the mirror publishes a one-hour delta (about 500 records), the incremental sync (target <= 10 s);
// - then a sync with nothing changed (target <= 2 s): the requests the mirror saw, by source, conditional or
//   not; against it, `bin/vdb sync status` (the CLI's own start and one round trip).
// Writes bench/results/sync.json.
import { Effect, Layer, Redacted, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { layerPostgres } from "../src/db/Database.ts"
import { MigrationsLayer } from "../src/db/Migrations.ts"
import { ingest } from "../src/ingest/Ingest.ts"
import { VulnStore } from "../src/vulns/VulnStore.ts"
import { freePort } from "../test/support/processes.ts"
import { databaseUrl } from "./benchDatabase.ts"
import { spawnServeApi } from "./benchServer.ts"
import { pidMicros, postgresDelta, postgresMicros } from "./cpuShare.ts"
import { psql, scratchDatabaseName } from "./scratchDatabase.ts"
import { sampleServer } from "./serverSamples.ts"
import { syncFeedData } from "./syncFeedData.ts"
import { type MirrorHit, startSyncMirror } from "./syncMirror.ts"
import { forkReaders, readerOrganization } from "./vulnReaders.ts"

const DATA = fileURLToPath(new URL("../../shared/data", import.meta.url))
const RESULTS = fileURLToPath(new URL("./results/", import.meta.url))
const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url))
const args = process.argv.slice(2)
const option = (name: string, fallback: number) => {
  const i = args.indexOf(name)
  return i === -1 ? fallback : Number(args[i + 1])
}
/** Options followed by a value. */
const VALUED = ["--readers", "--reader-rate", "--cpu-prof", "--timeline"]
const positional = args.filter((arg, i) => !arg.startsWith("--") && !VALUED.includes(args[i - 1] ?? ""))
const COUNT = Number(positional[0] ?? 1_300_000)
const READERS = option("--readers", 4)
const READER_RATE = option("--reader-rate", 100)
/** `--sequential`: the first sync one source after another (each one's RSS apart) rather than all at once. */
const SEQUENTIAL = args.includes("--sequential")
/** `--cpu-prof DIR`: the server runs under V8's CPU profiler, its profile written to DIR when it stops. */
const CPU_PROF = args.includes("--cpu-prof") ? args[args.indexOf("--cpu-prof") + 1] : undefined
/** `--timeline FILE`: every sample of the server's metrics during the first sync, written to FILE. */
const TIMELINE = args.includes("--timeline") ? args[args.indexOf("--timeline") + 1] : undefined
/** The first sync's order: the catalogue, then the API, then the archives. */
const SOURCES = ["epss", "nist-nvd", "mitre", "osv"] as const
const TARGET = { perSecond: 10_000, rssAboveIdleMiB: 400, p99Ms: 50, incrementalSeconds: 10, unchangedSeconds: 2 }

interface Outcome {
  readonly source: string
  readonly status: string
  readonly changed: number
  readonly failed: number
  readonly error?: { readonly message: string }
}

/** The server's resident set, from /proc (the normalising threads are in it). */
const rssMiB = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))
  return m === null ? 0 : Number(m[1]) / 1024
}

const rounded = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits

const program = Effect.gen(function*() {
  const data = syncFeedData(COUNT)
  const mirror = yield* Effect.acquireRelease(
    Effect.promise(() => startSyncMirror(data)),
    (m) => Effect.promise(m.close)
  )
  const name = scratchDatabaseName("sync")
  const work = mkdtempSync(join(tmpdir(), "vdb-bench-sync-"))
  yield* Effect.addFinalizer(() =>
    Effect.promise(async () => {
      await psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      rmSync(work, { recursive: true, force: true })
    })
  )
  yield* Effect.promise(() => psql(`CREATE DATABASE ${name}`))
  const url = databaseUrl(name)
  const Store = VulnStore.layer.pipe(
    Layer.provideMerge(Layer.provideMerge(MigrationsLayer, layerPostgres(Redacted.make(url), 4)))
  )
  // ../shared/data first: the readers read its CVEs while the sync runs.
  console.error("ingesting ../shared/data …")
  const { ids, masterKey, org } = yield* Effect.gen(function*() {
    yield* ingest({ paths: [], all: DATA }, { batchSize: 2000 }).pipe(Stream.runDrain)
    const sql = yield* SqlClient.SqlClient
    const ids = (yield* sql<{ identifier: string }>`SELECT DISTINCT identifier FROM vuln_records
      WHERE identifier LIKE 'CVE-%' ORDER BY identifier LIMIT 500`.pipe(Effect.orDie)).map((r) => r.identifier)
    return { ids, ...(yield* readerOrganization) }
  }).pipe(Effect.provide(Store), Effect.scoped)
  const idsFile = join(work, "reader-ids.json")
  writeFileSync(idsFile, JSON.stringify(ids))

  const metricsPort = yield* Effect.promise(freePort)
  const env = {
    DATABASE_URL: url,
    // Its own port (not 9464, which another bench's server may hold): scraped during the first sync.
    VDB_METRICS_PORT: String(metricsPort),
    VDB_MASTER_KEY: Buffer.from(masterKey).toString("base64"),
    VDB_DATA_DIR: join(work, "data"),
    VDB_LOG_LEVEL: "Warn",
    // The keyed rate (50 requests per 30 s), as a deployment syncing NVD runs; the mirror ignores the key.
    VDB_NVD_API_KEY: "bench-loopback-key",
    ...mirror.env
  }
  const port = yield* Effect.promise(freePort)
  const { server } = yield* Effect.acquireRelease(
    Effect.promise(() =>
      spawnServeApi({
        env,
        port,
        logPath: join(work, "server.log"),
        nodeFlags: CPU_PROF === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${CPU_PROF}`]
      })
    ),
    ({ stop }) => Effect.promise(stop)
  )
  const pid = server.pid!

  /** `bin/vdb sync SOURCES --json` as a user runs it (over the server's admin socket): outcomes and seconds. */
  const sync = (sources: ReadonlyArray<string>) =>
    Effect.promise(() =>
      new Promise<{ outcomes: Array<Outcome>; seconds: number }>((done, reject) => {
        const started = performance.now()
        const cli = spawn(process.execPath, [
          "--disable-warning=ExperimentalWarning",
          MAIN,
          "sync",
          ...sources,
          "--json"
        ], {
          env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
          stdio: ["ignore", "pipe", "ignore"]
        })
        let out = ""
        cli.stdout.setEncoding("utf8").on("data", (text: string) => (out += text))
        cli.once("exit", (code) => {
          const seconds = (performance.now() - started) / 1000
          try {
            done({ outcomes: JSON.parse(out) as Array<Outcome>, seconds })
          } catch {
            reject(new Error(`bin/vdb sync ${sources.join(" ")} exited with ${code}: ${out.slice(-500)}`))
          }
        })
      })
    )
  const requestsOf = (hits: ReadonlyArray<MirrorHit>) => {
    const by: Record<string, { requests: number; conditional: number; notModified: number }> = {}
    for (const hit of hits) {
      const row = by[hit.source] ??= { requests: 0, conditional: 0, notModified: 0 }
      row.requests++
      if (hit.conditional) row.conditional++
      if (hit.status === 304) row.notModified++
    }
    return by
  }

  // Idle: the server up and answering the readers, before any sync.
  const readers = READERS > 0
    ? yield* Effect.promise(() => forkReaders(port, org.apiKey, idsFile, READERS, READER_RATE))
    : undefined
  yield* Effect.sleep("3 seconds")
  const idle = rssMiB(pid)
  let peak = idle
  /** The peak since the current phase started (each source of the first sync is one). */
  let phasePeak = idle
  const sampler = setInterval(() => {
    const now = rssMiB(pid)
    peak = Math.max(peak, now)
    phasePeak = Math.max(phasePeak, now)
  }, 200)
  yield* Effect.addFinalizer(() => Effect.sync(() => clearInterval(sampler)))
  const loadAtStart = loadavg().map((n) => rounded(n, 2))
  const serverSamples = sampleServer(metricsPort, pid)

  console.error(`first sync of ${COUNT} records (${JSON.stringify(data.counts)}), ${READERS} readers on /vuln …`)
  const published = {
    epss: data.counts.epss,
    "nist-nvd": data.counts.nvd,
    mitre: data.counts.mitre,
    osv: data.counts.osv
  }
  // CPU of the first sync: the server's process (every thread) and PostgreSQL's backends on this
  // database, sampled each second so a backend that ends meanwhile still counts up to its last sample;
  // the other PostgreSQL processes (WAL writer, checkpointer, other benches' sessions) apart.
  const serverCpuBefore = pidMicros(pid)
  const ourBackendsBefore = postgresMicros(name)
  const allPostgresBefore = postgresMicros()
  const ourBackendsSeen = new Map(ourBackendsBefore)
  const backendSampler = setInterval(() => {
    for (const [p, micros] of postgresMicros(name)) ourBackendsSeen.set(p, micros)
  }, 1000)
  const firstStarted = performance.now()
  const runFirst = (source: typeof SOURCES[number]) =>
    Effect.gen(function*() {
      phasePeak = rssMiB(pid)
      const run = yield* sync([source])
      const records = published[source]
      const row = {
        ...run.outcomes[0]!,
        records,
        seconds: rounded(run.seconds, 2),
        perSecond: Math.round(records / run.seconds),
        ...(SEQUENTIAL ? { rssAboveIdleMiB: rounded(phasePeak - idle) } : {})
      }
      console.error(`  ${JSON.stringify(row)}`)
      return row
    })
  // At once by default, as `serve`'s schedule runs them (each source its own job): NVD's published
  // rate limit (2,000 records a request, 50 requests per 30 s with a key) bounds it alone, not the whole.
  const first = yield* Effect.forEach(SOURCES, runFirst, { concurrency: SEQUENTIAL ? 1 : "unbounded" })
  const firstSeconds = (performance.now() - firstStarted) / 1000
  clearInterval(backendSampler)
  for (const [p, micros] of postgresMicros(name)) ourBackendsSeen.set(p, micros)
  const serverCpuAfter = pidMicros(pid)
  const allPostgresAfter = postgresMicros()
  const backendMicros = postgresDelta(ourBackendsBefore, ourBackendsSeen)
  const otherPostgresMicros = postgresDelta(
    allPostgresBefore,
    new Map([...allPostgresAfter].filter(([p]) => !ourBackendsSeen.has(p)))
  )
  const perThousand = (micros: number) => rounded(micros / 1_000_000 / (COUNT / 1000), 3)
  const firstCpu = serverCpuBefore === undefined || serverCpuAfter === undefined ? undefined : {
    /** CPU seconds per 1,000 records of the first sync. */
    serverSecondsPer1000: perThousand(serverCpuAfter - serverCpuBefore),
    backendsSecondsPer1000: perThousand(backendMicros),
    /** PostgreSQL's other processes (WAL writer, checkpointer, autovacuum; other benches' sessions too). */
    otherPostgresSecondsPer1000: perThousand(otherPostgresMicros),
    totalSecondsPer1000: perThousand(serverCpuAfter - serverCpuBefore + backendMicros)
  }
  if (firstCpu !== undefined) console.error(`  cpu: ${JSON.stringify(firstCpu)}`)
  const firstPerSecond = Math.round(COUNT / firstSeconds)
  const readerStats = readers === undefined ? undefined : yield* Effect.promise(readers.stop)
  if (readerStats !== undefined) console.error(`  readers: ${JSON.stringify(readerStats)}`)
  const peakDuringFirst = peak
  const { summary: serverDuring, timeline } = serverSamples.stop()
  if (TIMELINE !== undefined) writeFileSync(TIMELINE, `${JSON.stringify(timeline)}\n`)
  console.error(`  server: ${JSON.stringify(serverDuring)}`)

  const delta = mirror.publishDelta()
  console.error(`incremental sync of a one-hour delta (${delta} records) …`)
  const incremental = yield* sync(SOURCES)
  console.error(`  ${rounded(incremental.seconds, 2)} s: ${JSON.stringify(incremental.outcomes)}`)

  // What the CLI costs around any sync: its start and one admin-socket round trip.
  const cli = yield* sync(["status"])
  console.error(`sync with nothing changed (the CLI alone, \`bin/vdb sync status\`: ${rounded(cli.seconds, 2)} s) …`)
  const asked = mirror.hits.length
  const unchanged = yield* sync(SOURCES)
  const unchangedRequests = requestsOf(mirror.hits.slice(asked))
  console.error(`  ${rounded(unchanged.seconds, 2)} s: ${JSON.stringify(unchangedRequests)}`)
  clearInterval(sampler)

  const failed = [...first, ...incremental.outcomes, ...unchanged.outcomes].filter((o) => o.status === "failed")
  const rssAboveIdle = rounded(peak - idle)
  const onlyConditional = Object.values(unchangedRequests).every((r) => r.conditional === r.requests)
  const result = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? "unknown" },
    loadAverage: { start: loadAtStart, end: loadavg().map((n) => rounded(n, 2)) },
    records: COUNT,
    published: data.counts,
    first: {
      at: SEQUENTIAL ? "one after another" : "at once",
      seconds: rounded(firstSeconds, 2),
      perSecond: firstPerSecond,
      ...(firstCpu === undefined ? {} : { cpu: firstCpu }),
      sources: first
    },
    rss: {
      idleMiB: rounded(idle),
      peakMiB: rounded(peak),
      peakDuringFirstMiB: rounded(peakDuringFirst),
      aboveIdleMiB: rssAboveIdle
    },
    ...(readerStats ? { readers: { during: "the first sync", endpoint: "GET /v1/vuln/{id}", ...readerStats } } : {}),
    /** The server's event loop, pool and heaps during the first sync, from its /metrics (`serverSamples.ts`). */
    server: serverDuring,
    incremental: { records: delta, seconds: rounded(incremental.seconds, 2), outcomes: incremental.outcomes },
    unchanged: {
      seconds: rounded(unchanged.seconds, 2),
      /** Baseline, same run: `bin/vdb sync status` (the CLI's start and one round trip to the server). */
      cliSeconds: rounded(cli.seconds, 2),
      requests: unchangedRequests,
      onlyConditional,
      outcomes: unchanged.outcomes
    },
    target: TARGET,
    ratioToTarget: {
      firstPerSecond: rounded(firstPerSecond / TARGET.perSecond, 3),
      rssAboveIdle: rounded(rssAboveIdle / TARGET.rssAboveIdleMiB, 3),
      ...(readerStats ? { p99: rounded(readerStats.p99 / TARGET.p99Ms, 3) } : {}),
      incremental: rounded(incremental.seconds / TARGET.incrementalSeconds, 3),
      unchanged: rounded(unchanged.seconds / TARGET.unchangedSeconds, 3)
    },
    met: {
      firstPerSecond: firstPerSecond >= TARGET.perSecond,
      rssAboveIdle: rssAboveIdle <= TARGET.rssAboveIdleMiB,
      p99: readerStats === undefined ? undefined : readerStats.p99 <= TARGET.p99Ms && readerStats.errors === 0,
      incremental: incremental.seconds <= TARGET.incrementalSeconds,
      unchanged: unchanged.seconds <= TARGET.unchangedSeconds && onlyConditional,
      noFailedSource: failed.length === 0
    }
  }
  mkdirSync(RESULTS, { recursive: true })
  writeFileSync(join(RESULTS, "sync.json"), `${JSON.stringify(result, null, 2)}\n`)
  console.log(JSON.stringify(result, null, 2))
  console.error(
    `ratios to target (≤ 1 is met for all but the first-sync rate): ${JSON.stringify(result.ratioToTarget)}`
  )
})

await Effect.runPromise(Effect.scoped(program))
