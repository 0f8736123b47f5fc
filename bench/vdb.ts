// `npm run bench -- vdb [durationMs] [--rounds N] [--extra-rounds N] [--concurrency N] [--profile DIR]
// [--parts] [--floor] [--no-cold] [--server-log FILE]`:
// `GET /v1/vuln/{id}` throughput with authentication (ApiKey), rate limiting
// (limits 0) and the usage log on, against a bare single-row PostgreSQL fetch
// of the same record, in the same run. Then the same request in other
// configurations (limits set but never reached, a JWT, `Accept-Encoding:
// gzip`, a 304 for `If-None-Match`), each against that bare fetch, and a
// cold-cache pass (every identifier of the fixture corpus once, after
// ingesting it). Writes bench/results/vdb.json. Metrics are on (`bin/vdb serve`'s default);
// `BENCH_TRACING=0.1` also turns tracing on at 10 % sampling, exporting to a loopback OTLP
// receiver (`bench/otlpReceiver.ts`), and writes bench/results/vdb-tracing.json instead.
//
// Three processes, so nothing measured shares an event loop with its load:
// this one (seeds a throwaway database, orchestrates), the server under test
// (`bin/vdb serve api`, the real wiring, access log included, written to a
// file) and the load generator (`bench/vdb/load.ts`), which drives either the
// API over keep-alive HTTP or the bare fetch over a pool of the server's size,
// at the same concurrency. Rounds alternate bare/API; each side reports its
// median round. The load process also accounts CPU time from /proc by role
// (itself, the server, this database's backends, everything else): `cpuRatio`
// compares the CPU one request costs on each side, which is what bounds the
// throughput ratio on a machine whose cores are the limit, and which moves far
// less than req/s when something else runs on the machine ("other").
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { spawn } from "node:child_process"
import { createHash, randomBytes } from "node:crypto"
import { copyFileSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { layerPostgres } from "../src/db/Database.ts"
import { MigrationsLayer } from "../src/db/Migrations.ts"
import { Organizations } from "../src/orgs/Organizations.ts"
import { MasterKey } from "../src/secrets/MasterKey.ts"
import { SecretBox } from "../src/secrets/SecretBox.ts"
import { VulnStore } from "../src/vulns/VulnStore.ts"
import { freePort } from "../test/support/processes.ts"
import { benchTracing } from "./otlpReceiver.ts"
import { scratchDatabaseName } from "./scratchDatabase.ts"
import { SERVER_ENV, SERVER_NODE_FLAGS } from "./serverFlags.ts"
import { bearerFor, coldPass, otherConfigurations } from "./vdb/configurations.ts"
import type { LoadStats } from "./vdb/load.ts"

const ROOT = fileURLToPath(new URL("../", import.meta.url))
const ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
const CVE = "CVE-2021-44228"

const args = process.argv.slice(2)
const option = (name: string) => {
  const i = args.indexOf(name)
  return i === -1 ? undefined : args[i + 1]
}
const DURATION_MS = Number(args.find((a, i) => /^\d+$/.test(a) && !args[i - 1]?.startsWith("--")) ?? 5000)
const WARMUP_MS = 1500
const ROUNDS = Number(option("--rounds") ?? 3)
/** Rounds of each other configuration (median taken). */
const EXTRA_ROUNDS = Number(option("--extra-rounds") ?? 1)
const COLD = !args.includes("--no-cold")
/**
 * "Limits that are never reached": 5/min and 1000/week would refuse all but the first five
 * requests of a run, so this organization's limits are as high as they go: every request
 * still runs the one atomic counter statement.
 */
const NEVER_REACHED = 2_000_000_000
const CONCURRENCY = Number(option("--concurrency") ?? 32)
/** The server's pool (`VDB_DATABASE_POOL_SIZE`, default 10) and the bare fetch's. */
const POOL = 10
const PROFILE_DIR = option("--profile")
/** Also measure the store's lookup and the organization read on their own (same pool, same concurrency). */
const PARTS = args.includes("--parts")
/** Also measure bench/vdb/floor.ts, the least a server does for this request (see there). */
const FLOOR = args.includes("--floor")
/** Keep the server's output (access log included) here. */
const SERVER_LOG = option("--server-log")

const admin = (statement: string) =>
  Effect.scoped(Effect.gen(function*() {
    const c = yield* PgClient.make({ url: Redacted.make(ADMIN_URL), maxConnections: 1 })
    yield* c.unsafe(statement)
  })).pipe(Effect.provide(Reactivity.layer), Effect.orDie)

const record = {
  dataType: "CVE_RECORD",
  dataVersion: "5.1",
  cveMetadata: { cveId: CVE, assignerOrgId: "8254265b-2729-46b6-b9e3-3dfca2d5bfca", state: "PUBLISHED" },
  containers: {
    cna: {
      title: "Apache Log4j2 JNDI features do not protect against attacker controlled LDAP",
      descriptions: [{ lang: "en", value: "x".repeat(800) }]
    },
    adp: [{ x_dataSource: "mitre", x_aliases: [] }]
  }
}

/** Seeds the record, an organization with both limits 0 and one with limits it never reaches. */
const seed = (url: string, masterKey: Uint8Array) =>
  Effect.gen(function*() {
    const Box = SecretBox.layer.pipe(Layer.provide(Layer.succeed(MasterKey, MasterKey.fromBytes(masterKey))))
    const Sql = layerPostgres(Redacted.make(url), 2).pipe(Layer.orDie)
    const deps = yield* Layer.build(
      Layer.mergeAll(Organizations.layer, VulnStore.layer).pipe(
        Layer.provideMerge(MigrationsLayer.pipe(Layer.orDie)),
        Layer.provideMerge(Layer.mergeAll(Sql, Box))
      )
    )
    const store = Context.get(deps, VulnStore)
    const content = JSON.stringify(record)
    const hash = createHash("sha256").update(content).digest("hex")
    yield* store.putRaw([{ source: "mitre", identifier: CVE, content, hash }])
    yield* store.putNormalised([{
      source: "mitre",
      identifier: CVE,
      hash,
      fresh: true,
      outputs: [{
        kind: "record",
        source: "mitre",
        upstream: "mitre" as never,
        identifier: CVE,
        record,
        aliases: [],
        counts: { references: 1, problemTypes: 1, metrics: 1, affected: 1, impacts: 0, descriptions: 1, scorecards: 0 },
        gcve: false
      }]
    }], [])
    const orgs = Context.get(deps, Organizations)
    const org = yield* orgs.create({ name: "bench", perMinute: 0, perWeek: 0 })
    const limited = yield* orgs.create({ name: "bench-limited", perMinute: NEVER_REACHED, perWeek: NEVER_REACHED })
    return { apiKey: org.apiKey, orgUuid: org.uuid, secret: org.secret, limitedKey: limited.apiKey }
  }).pipe(Effect.scoped)

const node = process.execPath

/** `bin/vdb serve api` (what bin/vdb execs, with its Node flags and environment), optionally under the CPU profiler. */
const startServer = async (env: Record<string, string>, dataDir: string, port: number) => {
  const log = openSync(join(dataDir, "server.log"), "a")
  const profile = PROFILE_DIR === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${PROFILE_DIR}`]
  const argv = [
    ...profile,
    ...SERVER_NODE_FLAGS,
    "--disable-warning=ExperimentalWarning",
    join(ROOT, "src/cli/main.ts"),
    "serve",
    "api"
  ]
  const child = spawn(node, argv, {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...SERVER_ENV, ...env },
    stdio: ["ignore", log, log]
  })
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)))
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(`server exited early: ${readFileSync(join(dataDir, "server.log"), "utf8")}`)
    }
    if (Date.now() > deadline) throw new Error("server not ready within 60 s")
    if (await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false)) break
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    pid: child.pid,
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM")
      return exited
    }
  }
}

const load = <A extends { readonly errors: number } = LoadStats>(
  mode: "http" | "list" | "sql" | "parts",
  params: ReadonlyArray<string | number>,
  roles: Record<string, string> = {}
) =>
  new Promise<A>((resolve, reject) => {
    const child = spawn(node, [join(ROOT, "bench/vdb/load.ts"), mode, ...params.map(String)], {
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, ...roles }
    })
    let out = ""
    child.stdout.on("data", (d) => (out += d))
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`load generator (${mode}) exited with ${code}`))
      const stats = JSON.parse(out) as A
      if (stats.errors > 0) return reject(new Error(`${mode}: ${stats.errors} failed requests`))
      resolve(stats)
    })
  })

/** `--floor`: bench/vdb/floor.ts (plain node:http, cached organization and answer) under the same load, one round. */
const runFloor = async (databaseUrl: string, orgUuid: string, apiKey: string) => {
  const port = await freePort()
  const child = spawn(node, [join(ROOT, "bench/vdb/floor.ts"), databaseUrl, String(port), orgUuid, CVE, String(POOL)], {
    stdio: ["ignore", "pipe", "inherit"]
  })
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.once("data", () => resolve())
      child.once("exit", (code) => reject(new Error(`floor server exited with ${code}`)))
    })
    return await load("http", [port, `/v1/vuln/${CVE}`, apiKey, CONCURRENCY, WARMUP_MS, DURATION_MS], {
      VDB_BENCH_SERVER_PID: String(child.pid ?? 0),
      VDB_BENCH_DATABASE: new URL(databaseUrl).pathname.slice(1)
    })
  } finally {
    child.kill("SIGTERM")
  }
}

const ownCpu = (s: LoadStats) => s.cpuMsPer1000.load + s.cpuMsPer1000.server + s.cpuMsPer1000.postgres

const middle = (values: ReadonlyArray<number>) =>
  [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!

const median = (rounds: ReadonlyArray<LoadStats>) =>
  [...rounds].sort((a, b) => a.rps - b.rps)[Math.floor((rounds.length - 1) / 2)]!

const main = async () => {
  const dbName = scratchDatabaseName("vdb")
  await Effect.runPromise(admin(`CREATE DATABASE ${dbName}`))
  const dataDir = mkdtempSync(join(tmpdir(), "vdb-bench-"))
  const url = new URL(ADMIN_URL)
  url.pathname = `/${dbName}`
  let server: { readonly pid: number | undefined; stop: () => Promise<number | null> } | undefined
  const tracing = await benchTracing()
  try {
    const masterKey = new Uint8Array(randomBytes(32))
    const { apiKey, limitedKey, orgUuid, secret } = await Effect.runPromise(seed(url.toString(), masterKey))
    const port = await freePort()
    const serverEnv = {
      DATABASE_URL: url.toString(),
      VDB_MASTER_KEY: Buffer.from(masterKey).toString("base64"),
      VDB_DATA_DIR: join(dataDir, "data"),
      VDB_API_PORT: String(port),
      VDB_DATABASE_POOL_SIZE: String(POOL),
      ...tracing?.env
    }
    server = await startServer(serverEnv, dataDir, port)

    const path = `/v1/vuln/${CVE}`
    const check = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: apiKey } })
    const body = await check.json() as Array<{ cveMetadata?: { cveId?: string } }>
    if (check.status !== 200 || body[0]?.cveMetadata?.cveId !== CVE) {
      throw new Error(`unexpected response ${check.status}: ${JSON.stringify(body).slice(0, 200)}`)
    }

    // The load process accounts CPU by role (itself, the server, this database's backends, the rest).
    const roles = { VDB_BENCH_SERVER_PID: String(server.pid ?? 0), VDB_BENCH_DATABASE: dbName }
    const measured = (mode: "sql" | "http", params: ReadonlyArray<string | number>) => load(mode, params, roles)
    const bare: Array<LoadStats> = []
    const api: Array<LoadStats> = []
    for (let round = 0; round < ROUNDS; round++) {
      bare.push(await measured("sql", [url.toString(), CVE, POOL, CONCURRENCY, WARMUP_MS, DURATION_MS]))
      api.push(await measured("http", [port, path, apiKey, CONCURRENCY, WARMUP_MS, DURATION_MS]))
    }

    const others = EXTRA_ROUNDS === 0 ? {} : await otherConfigurations({
      port,
      path,
      keys: { apiKey, limitedKey, bearer: await bearerFor(port, orgUuid, secret) },
      neverReached: NEVER_REACHED,
      rounds: EXTRA_ROUNDS,
      bare,
      measure: ([authorization, ...rest]) =>
        load("http", [port, path, authorization!, CONCURRENCY, WARMUP_MS, DURATION_MS, ...rest], roles)
    })
    const cold = COLD
      ? await coldPass({
        root: ROOT,
        env: serverEnv,
        databaseUrl: url.toString(),
        pathsFile: join(dataDir, "paths.txt"),
        measure: (file) => load("list", [port, file, apiKey, CONCURRENCY], roles)
      })
      : undefined
    await server.stop()
    server = undefined
    const floor = FLOOR ? await runFloor(url.toString(), orgUuid, apiKey) : undefined
    const parts = PARTS
      ? await load<{ lookup: LoadStats; org: LoadStats; errors: number }>(
        "parts",
        [url.toString(), CVE, orgUuid, POOL, CONCURRENCY, WARMUP_MS, DURATION_MS],
        { VDB_BENCH_DATABASE: dbName }
      )
      : undefined

    const apiStats = median(api)
    const bareStats = median(bare)
    const result = {
      benchmark: "vdb /v1/vuln/{id}",
      at: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model ?? "unknown" },
      loadAverage: loadavg().map((n) => Math.round(n * 100) / 100),
      setup: "server (bin/vdb serve api, access log to a file), load generator and PostgreSQL in separate processes; " +
        "keep-alive HTTP/1.1, one connection per worker",
      durationMs: DURATION_MS,
      warmupMs: WARMUP_MS,
      rounds: ROUNDS,
      concurrency: CONCURRENCY,
      pool: POOL,
      api: { ...apiStats, auth: "ApiKey", rateLimit: "limits 0", usageLog: "on", rounds: api.map((s) => s.rps) },
      bareFetch: { ...bareStats, rounds: bare.map((s) => s.rps) },
      ratio: Math.round((apiStats.rps / bareStats.rps) * 1000) / 1000,
      // The same ratio from CPU cost (load + server + this database's backends per request): what the
      // throughput ratio is when the machine's cores are the limit, and far less sensitive than rps to
      // whatever else runs on the machine meanwhile ("other").
      cpuRatio: Math.round((middle(bare.map(ownCpu)) / middle(api.map(ownCpu))) * 1000) / 1000,
      target: 0.5,
      p99VsBare: Math.round((apiStats.p99 / bareStats.p99) * 100) / 100,
      // Issue 13's targets: >= 50 % of the bare fetch's req/s, and p99 <= 3x the bare fetch's p99.
      met: { throughput: apiStats.rps / bareStats.rps >= 0.5, p99: apiStats.p99 <= 3 * bareStats.p99 },
      configurations: others,
      ...(cold === undefined ? {} : { coldCache: cold }),
      ...(floor === undefined ? {} : {
        floor: {
          ...floor,
          ratio: Math.round((floor.rps / bareStats.rps) * 1000) / 1000,
          cpuRatio: Math.round((middle(bare.map(ownCpu)) / ownCpu(floor)) * 1000) / 1000,
          what: "bench/vdb/floor.ts"
        }
      }),
      ...(parts === undefined ? {} : {
        parts: {
          storeLookup: {
            rps: parts.lookup.rps,
            p50: parts.lookup.p50,
            p99: parts.lookup.p99,
            cpuMsPer1000: parts.lookup.cpuMsPer1000
          },
          orgRead: { rps: parts.org.rps, p50: parts.org.p50, p99: parts.org.p99, cpuMsPer1000: parts.org.cpuMsPer1000 }
        }
      })
    }
    mkdirSync(new URL("./results/", import.meta.url), { recursive: true })
    const output = tracing === undefined
      ? result
      : { ...result, tracing: { ratio: tracing.ratio, sampler: "parentbased_traceidratio", ...tracing.stats() } }
    writeFileSync(
      new URL(tracing === undefined ? "./results/vdb.json" : "./results/vdb-tracing.json", import.meta.url),
      JSON.stringify(output, null, 2) + "\n"
    )
    console.log(JSON.stringify(result, null, 2))
    console.log(
      `ratio ${(result.ratio * 100).toFixed(1)} % by req/s, ${
        (result.cpuRatio * 100).toFixed(1)
      } % by CPU per request (api ${apiStats.rps} req/s vs bare ${bareStats.rps} req/s; ` +
        `p50 ${apiStats.p50}/${bareStats.p50} ms, p99 ${apiStats.p99}/${bareStats.p99} ms)`
    )
  } finally {
    await server?.stop()
    await tracing?.close()
    await Effect.runPromise(admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).pipe(Effect.ignore))
    if (SERVER_LOG !== undefined) copyFileSync(join(dataDir, "server.log"), SERVER_LOG)
    rmSync(dataDir, { recursive: true, force: true })
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
