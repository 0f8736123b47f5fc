// `npm run bench -- query [COUNT] [SECONDS] [--profile DIR]`: the OSV-compatible package queries
// (issue 36) on PostgreSQL, over ../shared/data and COUNT (default 1 000 000) records cloned from
// it, the ingest bench's generated set, kept between runs (`benchDatabase.ts`). The queries: 1,000
// packages of that set (each a distinct package, every ecosystem with a version order, chosen by a
// hash so every run asks the same), each at a version its index rows name (an enumerated version or
// a range bound), so answers mix hits and misses.
// - `querybatch`: POSTs of all 1,000 as one batch, one client, for SECONDS; queries/s. Against it,
//   in the same run: the bare indexed SQL lookup of the same rows (the package index rows of the
//   1,000 packages with each record's `modified`, one statement, as the API server's pool does it),
//   queries/s and the ratio.
// - `/v1/query`: the same 1,000 queries one a request from 32 keep-alive clients for SECONDS;
//   requests/s and latency (p50, p99; target p99 <= 10 ms), the answers' sizes (read in the untimed
//   pass) and µs of CPU a request by process (server, PostgreSQL, this load generator, machine).
//   Before it, in the same run, the same requests with a query string, which the fast path
//   (`src/api/QueryFastPath.ts`) leaves to the HttpApi: the same answers through the framework.
// Both after one untimed pass (the server's response cache warm, as a server in use has it).
// Server: `bin/vdb serve api` as deployed (its Node flags), an organization with limits 0;
// its response cache 1 GiB (`VDB_RESPONSE_CACHE_BYTES` from this process's environment overrides it; the
// server's default 256 MiB is outgrown by the 1,000 answers and their packages at a million records:
// docs/api.md, "Package queries under load"). The singles are measured twice: identity bodies, and with
// `Accept-Encoding: gzip` as Go's net/http (osv-scanner's client) sends it (the cached gzip form).
// Then the floor, in the same run: the same requests answered with the same bytes by a bare node:http
// server that does nothing else (`bareBodies.ts`), what moving these bodies costs on this machine.
// Writes bench/results/query.json.
import { Context, Effect, Layer, Redacted, Result } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { layerPostgres } from "../src/db/Database.ts"
import { Organizations } from "../src/orgs/Organizations.ts"
import { MasterKey } from "../src/secrets/MasterKey.ts"
import { SecretBox } from "../src/secrets/SecretBox.ts"
import { versionOrder } from "../src/versions/VersionOrder.ts"
import { freePort } from "../test/support/processes.ts"
import { type BareAnswer, rawPost, startBareBodies } from "./bareBodies.ts"
import { benchDatabase, databaseUrl } from "./benchDatabase.ts"
import { spawnServeApi } from "./benchServer.ts"
import { cpuSample, cpuSpent, pidMicros } from "./cpuShare.ts"
import { type HttpConnection, httpConnection, postBytes } from "./httpClient.ts"

const RESULTS = fileURLToPath(new URL("./results/", import.meta.url))
const args = process.argv.slice(2)
const option = (name: string) => {
  const i = args.indexOf(name)
  return i === -1 ? undefined : args[i + 1]
}
const positional = args.filter((arg, i) => !arg.startsWith("--") && !args[i - 1]?.startsWith("--"))
const COUNT = Number(positional[0] ?? 1_000_000)
const SECONDS = Number(positional[1] ?? 5)
const PROFILE_DIR = option("--profile")
const QUERIES = 1000
const CLIENTS = 32
/** The server's pool (`VDB_DATABASE_POOL_SIZE`, default 10) and the bare lookup's. */
const POOL = 10
const TARGET_BATCH_PER_SECOND = 20_000
const TARGET_P99_MS = 10
/**
 * The server's response cache: 1 GiB unless `VDB_RESPONSE_CACHE_BYTES` says otherwise. The 1,000
 * answers (130 MB as sent, mean 130 KB: a package of the cloned set holds about 170 records) and
 * their packages' entries outgrow the default 256 MiB, and asked in a cycle an LRU then misses on
 * every request; docs/operations.md sizes the cache for a working set like this one.
 */
const CACHE_BYTES = process.env.VDB_RESPONSE_CACHE_BYTES ?? String(1024 ** 3)

interface Query {
  readonly ecosystem: string
  readonly name: string
  readonly version: string
}

/** The 1,000 queries: distinct packages in ecosystems with a version order, each at a version its rows name. */
const chooseQueries = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ ecosystem: string; name: string; affected: string }>`
    SELECT ecosystem, name, affected FROM (
      SELECT DISTINCT ON (ecosystem, name) ecosystem, name, affected FROM vuln_packages
      ORDER BY ecosystem, name, md5(identifier)) AS one
    ORDER BY md5(ecosystem || '/' || name)`
  const queries: Array<Query> = []
  for (const row of rows) {
    if (Result.isFailure(versionOrder(row.ecosystem))) continue
    const entry = JSON.parse(row.affected) as {
      versions: Array<string>
      ranges: Array<{ events: Array<Record<string, string>> }>
    }
    const bounds = entry.ranges.flatMap((r) => r.events.map((e) => Object.values(e)[0]!)).filter((v) => v !== "0")
    const version = entry.versions[entry.versions.length >> 1] ?? bounds[0]
    if (version !== undefined) queries.push({ ecosystem: row.ecosystem, name: row.name, version })
    if (queries.length === QUERIES) break
  }
  return queries
})

/** The bare lookup: the 1,000 packages' index rows and each record's `modified`, one statement. */
const bareLookup = (queries: ReadonlyArray<Query>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ n: number; identifier: string; modified: string }>`
      SELECT q.n::int AS n, p.identifier, o.modified
      FROM unnest(${queries.map((q) => q.ecosystem)}::text[], ${
      queries.map((q) => q.name)
    }::text[]) WITH ORDINALITY AS q(ecosystem, name, n)
      JOIN vuln_packages p ON p.ecosystem = q.ecosystem COLLATE "C" AND p.name = q.name COLLATE "C"
      JOIN vuln_osv o ON o.origin_source = p.origin_source AND o.origin_identifier = p.origin_identifier
        AND o.source = p.source AND o.identifier = p.identifier`.pipe(Effect.orDie)
  })

/** Runs `once` from `workers` loops for SECONDS; calls/s and latency percentiles (ms). */
const measure = async (workers: number, once: (worker: number, n: number) => Promise<boolean>) => {
  const latencies: Array<number> = []
  let errors = 0
  const started = performance.now()
  const until = started + SECONDS * 1000
  await Promise.all(Array.from({ length: workers }, async (_, worker) => {
    for (let n = worker; performance.now() < until; n += workers) {
      const start = performance.now()
      if (!(await once(worker, n))) errors++
      latencies.push(performance.now() - start)
    }
  }))
  const seconds = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  const at = (p: number) =>
    Math.round((latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0) * 100) / 100
  return {
    calls: latencies.length,
    perSecond: latencies.length / seconds,
    p50: at(0.5),
    p99: at(0.99),
    max: at(1),
    errors
  }
}

const startServer = (url: string, masterKey: Uint8Array, work: string, port: number) =>
  Effect.acquireRelease(
    Effect.promise(async () =>
      spawnServeApi({
        env: {
          DATABASE_URL: url,
          VDB_MASTER_KEY: Buffer.from(masterKey).toString("base64"),
          VDB_DATA_DIR: join(work, "data"),
          VDB_RESPONSE_CACHE_BYTES: CACHE_BYTES,
          // Its own, as bench/workers.ts does: another server on the machine may hold the default 9464.
          VDB_METRICS_PORT: String(await freePort())
        },
        port,
        logPath: join(work, "server.log"),
        nodeFlags: PROFILE_DIR === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${PROFILE_DIR}`],
        readyWithinMs: 300_000
      })
    ),
    ({ stop }) => Effect.promise(stop)
  )

const program = Effect.gen(function*() {
  const name = yield* benchDatabase("query", COUNT)
  const url = databaseUrl(name)
  const work = mkdtempSync(join(tmpdir(), "vdb-bench-query-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(work, { recursive: true, force: true })))
  // Fixed per database: the first run seals the kept database with it, and later runs must open it.
  const masterKey = new Uint8Array(createHash("sha256").update(`bench master key ${name}`).digest())
  const Box = SecretBox.layer.pipe(Layer.provide(Layer.succeed(MasterKey, MasterKey.fromBytes(masterKey))))
  const context = yield* Layer.build(
    Organizations.layer.pipe(Layer.provideMerge(Box), Layer.provideMerge(layerPostgres(Redacted.make(url), POOL)))
  )
  const sql = Context.get(context, SqlClient.SqlClient)
  // A database kept from a run before the key was fixed was sealed with another: this bench's alone, it is resealed.
  yield* sql`DELETE FROM master_key_check`
  const queries = yield* chooseQueries.pipe(Effect.provideContext(context))
  const packageRows = yield* sql<{ rows: string }>`SELECT count(*)::text AS rows FROM vuln_packages`
  console.error(`${queries.length} queries; ${packageRows[0]!.rows} package index rows`)

  // The bare lookup, from this process over a pool of the server's size.
  const bare = yield* Effect.promise(() => {
    const run = () =>
      Effect.runPromise(Effect.map(bareLookup(queries).pipe(Effect.provideContext(context)), () => true))
    return run().then(() => measure(1, run))
  })
  const bareRows = (yield* bareLookup(queries).pipe(Effect.provideContext(context))).length
  console.error(
    `bare indexed SQL lookup: ${Math.round(bare.perSecond * queries.length)} queries/s (${bareRows} rows a batch)`
  )

  const orgs = Context.get(context, Organizations)
  const org = yield* orgs.create({ name: "bench-query", perMinute: 0, perWeek: 0 })
  const port = yield* Effect.promise(freePort)
  const { server } = yield* startServer(url, masterKey, work, port)

  const batch = postBytes(
    port,
    "/v1/querybatch",
    org.apiKey,
    JSON.stringify({
      queries: queries.map((q) => ({ package: { ecosystem: q.ecosystem, name: q.name }, version: q.version }))
    })
  )
  const singlesAt = (path: string, headers: Record<string, string> = {}) =>
    queries.map((q) =>
      postBytes(
        port,
        path,
        org.apiKey,
        JSON.stringify({ package: { ecosystem: q.ecosystem, name: q.name }, version: q.version }),
        headers
      )
    )
  const singles = singlesAt("/v1/query")
  // As OSV's clients ask: Go's net/http (osv-scanner's client) adds `Accept-Encoding: gzip` to every request.
  const singlesGzip = singlesAt("/v1/query", { "Accept-Encoding": "gzip" })
  // The same requests with a query string (which the endpoint ignores): the fast path leaves them to the HttpApi.
  const viaHttpApi = singlesAt("/v1/query?via=httpapi")
  const connections: Array<HttpConnection | undefined> = Array.from({ length: CLIENTS }, () => undefined)
  /** The port the measured requests go to: vdb's, or the bare floor's (`bareBodies.ts`) for its runs. */
  let target = port
  // A connection that failed (closed by the server, timed out) is opened again for the worker's next request.
  const send = async (worker: number, request: Buffer) => {
    const connection = connections[worker] ??= await httpConnection(target).catch(() => undefined)
    const status = connection === undefined ? 0 : await connection.get(request)
    if (status !== 200) {
      connection?.close()
      connections[worker] = undefined
    }
    return status === 200
  }

  // One untimed pass of each: the first reads of every package (cold cache), then the measured runs.
  const coldStarted = performance.now()
  if (!(yield* Effect.promise(() => send(0, batch)))) {
    throw new Error(`querybatch failed: ${readFileSync(join(work, "server.log"), "utf8").slice(-1000)}`)
  }
  const coldMs = performance.now() - coldStarted
  // The untimed pass of the singles reads each answer's size (what the measured run moves per request), and
  // keeps each answer's bytes as served, identity and gzip, for the bare floor (`bareBodies.ts`).
  const sizes: Array<number> = []
  const answers: Array<BareAnswer> = []
  for (const q of queries) {
    const request = JSON.stringify({ package: { ecosystem: q.ecosystem, name: q.name }, version: q.version })
    const [identity, gzip] = yield* Effect.promise(() =>
      Promise.all([
        rawPost(port, "/v1/query", org.apiKey, request, {}),
        rawPost(port, "/v1/query", org.apiKey, request, { "accept-encoding": "gzip" })
      ])
    )
    sizes.push(identity.byteLength)
    answers.push({ request, identity, gzip })
  }
  const sorted = [...sizes].sort((a, b) => a - b)
  const sizeAt = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0
  const meanBytes = sizes.reduce((n, b) => n + b, 0) / Math.max(1, sizes.length)
  const bodies = {
    meanBytes: Math.round(meanBytes),
    p50: sizeAt(0.5),
    p90: sizeAt(0.9),
    p99: sizeAt(0.99),
    max: sizeAt(1),
    empty: sizes.filter((b) => b <= 12).length
  }
  console.error(`/v1/query bodies: ${JSON.stringify(bodies)}`)
  // Connections left idle past the server's keep-alive timeout (5 s, while the sizes were read) are closed by it:
  // each measured run starts on fresh ones, so a closed connection is not counted as a failed request.
  const freshConnections = () => {
    for (const c of connections) c?.close()
    connections.fill(undefined)
  }
  freshConnections()
  const batched = yield* Effect.promise(() => measure(1, (worker) => send(worker, batch)))
  const batchPerSecond = Math.round(batched.perSecond * queries.length)
  console.error(
    `querybatch: ${batchPerSecond} queries/s (${batched.calls} batches, first one ${Math.round(coldMs)} ms, cache cold)`
  )
  /** The singles from 32 clients for SECONDS, with µs of CPU a request by process. */
  const measureSingles = (requests: ReadonlyArray<Buffer>, label: string, pid = server.pid) =>
    Effect.gen(function*() {
      freshConnections()
      const cpuBefore = cpuSample()
      const serverBefore = pidMicros(pid)
      const from = process.hrtime.bigint()
      const run = yield* Effect.promise(() =>
        measure(CLIENTS, (worker, n) => send(worker, requests[n % requests.length]!))
      )
      // The run's window on the monotonic clock V8's profile timestamps use (µs), to slice the server's profile by.
      if (PROFILE_DIR !== undefined) {
        console.error(`profile window ${label}: ${from / 1000n} ${process.hrtime.bigint() / 1000n} µs`)
      }
      const serverAfter = pidMicros(pid)
      const spent = cpuSpent(cpuBefore, cpuSample())
      const perRequest = (micros: number | undefined) =>
        micros === undefined ? undefined : Math.round(micros / Math.max(1, run.calls))
      // The server, PostgreSQL, this load generator, the whole machine (every process on it).
      const cpu = {
        serverMicros: perRequest(
          serverBefore === undefined || serverAfter === undefined ? undefined : serverAfter - serverBefore
        ),
        postgresMicros: perRequest(spent?.postgres),
        loadGeneratorMicros: perRequest(spent?.process),
        machineBusyMicros: perRequest(spent?.machineBusy),
        machineStealMicros: perRequest(spent?.machineSteal)
      }
      console.error(
        `${label} at ${CLIENTS} clients: ${Math.round(run.perSecond)}/s, p50 ${run.p50} ms, p99 ${run.p99} ms; ` +
          `${Math.round((run.perSecond * meanBytes) / 1e6)} MB/s of bodies; CPU µs a request ${JSON.stringify(cpu)}`
      )
      return { ...run, cpu }
    })
  const httpApi = yield* measureSingles(viaHttpApi, "/v1/query through the HttpApi")
  const single = yield* measureSingles(singles, "/v1/query")
  // Untimed first: each answer's gzip form is made once, off the event loop, on its first asking.
  for (let n = 0; n < singlesGzip.length; n++) yield* Effect.promise(() => send(0, singlesGzip[n]!))
  const gzipped = yield* measureSingles(singlesGzip, "/v1/query, Accept-Encoding: gzip")
  const cpu = single.cpu
  // The floor: the same requests and answers from a bare node:http server, measured alike. vdb's server stays up
  // (idle), so the machine holds what it held for vdb's runs.
  const bareServer = yield* Effect.acquireRelease(
    Effect.promise(async () => startBareBodies(answers, await freePort())),
    (b) => Effect.promise(b.stop)
  )
  target = bareServer.port
  const floor = yield* measureSingles(singles, "bare node:http floor, identity", bareServer.pid)
  const floorGzip = yield* measureSingles(singlesGzip, "bare node:http floor, gzip", bareServer.pid)
  for (const c of connections) c?.close()

  const barePerSecond = Math.round(bare.perSecond * queries.length)
  const result = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? "unknown" },
    loadAverage: loadavg().map((n) => Math.round(n * 100) / 100),
    records: COUNT,
    responseCacheBytes: Number(CACHE_BYTES),
    packageIndexRows: Number(packageRows[0]!.rows),
    queries: queries.length,
    seconds: SECONDS,
    querybatch: {
      queriesPerSecond: batchPerSecond,
      batches: batched.calls,
      p50: batched.p50,
      p99: batched.p99,
      firstBatchMs: Math.round(coldMs),
      errors: batched.errors
    },
    bareLookup: { queriesPerSecond: barePerSecond, rowsPerBatch: bareRows, p50: bare.p50 },
    query: {
      clients: CLIENTS,
      perSecond: Math.round(single.perSecond),
      p50: single.p50,
      p99: single.p99,
      max: single.max,
      errors: single.errors,
      bodies,
      bodyMegabytesPerSecond: Math.round((single.perSecond * meanBytes) / 1e6),
      cpu,
      gzip: {
        what: "Accept-Encoding: gzip, as Go's net/http (osv-scanner's client) sends it",
        perSecond: Math.round(gzipped.perSecond),
        p50: gzipped.p50,
        p99: gzipped.p99,
        max: gzipped.max,
        errors: gzipped.errors,
        cpu: gzipped.cpu
      },
      bareFloor: {
        what:
          "the same answers' bytes from a bare node:http server (no auth, log, cache or metrics; bench/bareBodies.ts)",
        identity: { perSecond: Math.round(floor.perSecond), p50: floor.p50, p99: floor.p99, cpu: floor.cpu },
        gzip: { perSecond: Math.round(floorGzip.perSecond), p50: floorGzip.p50, p99: floorGzip.p99, cpu: floorGzip.cpu }
      },
      throughHttpApi: {
        perSecond: Math.round(httpApi.perSecond),
        p50: httpApi.p50,
        p99: httpApi.p99,
        cpu: httpApi.cpu
      }
    },
    ratioToBare: { querybatch: Number((batchPerSecond / barePerSecond).toFixed(3)) },
    target: { querybatchPerSecond: TARGET_BATCH_PER_SECOND, queryP99Ms: TARGET_P99_MS },
    met: {
      querybatch: batchPerSecond >= TARGET_BATCH_PER_SECOND,
      queryIdentity: single.p99 <= TARGET_P99_MS,
      queryGzip: gzipped.p99 <= TARGET_P99_MS,
      noErrors: batched.errors + single.errors + gzipped.errors + httpApi.errors === 0
    }
  }
  mkdirSync(RESULTS, { recursive: true })
  writeFileSync(join(RESULTS, "query.json"), `${JSON.stringify(result, null, 2)}\n`)
  console.log(JSON.stringify(result, null, 2))
})

await Effect.runPromise(Effect.scoped(program))
