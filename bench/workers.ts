// `make bench BENCH=workers`: throughput of `bin/vdb serve api` as one process against
// `--workers 2` on this machine, the same authenticated lookup (`GET /v1/vuln/{id}`, ApiKey,
// usage log on) from the same load generator (`bench/vdb/load.ts`, its own process, keep-alive
// connections), on one scratch PostgreSQL database. The load generator's CPU share of the
// machine's busy time is reported with each side: on 2 cores, a generator that takes a core's
// worth leaves the workers one core between them, so the ratio says as much about the machine as
// about vdb. Rounds alternate 1 and 2 processes; each side reports its median round. Writes
// bench/results/workers.json.
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { freePort, runVdb } from "../test/support/processes.ts"
import { spawnServeApi } from "./benchServer.ts"
import { psql, scratchDatabaseName } from "./scratchDatabase.ts"
import type { LoadStats } from "./vdb/load.ts"

const ROOT = fileURLToPath(new URL("../", import.meta.url))
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 5000)
const WARMUP_MS = 1500
const CONCURRENCY = 32
const PATH = "/v1/vuln/CVE-2021-44228"

const startServer = async (env: Record<string, string>, workers: number, port: number, log: string) => {
  const { server, stop } = await spawnServeApi({
    env: { ...env, VDB_WORKERS: String(workers) },
    port,
    logPath: log,
    readyWithinMs: 120_000
  })
  return { pid: server.pid ?? 0, stop }
}

const load = (params: ReadonlyArray<string | number>, roles: Record<string, string>) =>
  new Promise<LoadStats>((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, "bench/vdb/load.ts"), "http", ...params.map(String)], {
      stdio: ["ignore", "pipe", "inherit"],
      env: { ...process.env, ...roles }
    })
    let out = ""
    child.stdout.on("data", (d) => (out += d))
    child.once(
      "exit",
      (code) => (code === 0
        ? resolve(JSON.parse(out) as LoadStats)
        : reject(new Error(`load generator exited with ${code}`)))
    )
  })

const median = (values: ReadonlyArray<number>) =>
  [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!
const share = (s: LoadStats) => {
  const { load: generator, other, postgres, server } = s.cpuMsPer1000
  return Math.round((generator / (generator + server + postgres + other)) * 1000) / 1000
}

const main = async () => {
  const dbName = scratchDatabaseName("workers")
  await psql(`CREATE DATABASE ${dbName}`)
  const dataDir = mkdtempSync(join(tmpdir(), "vdb-bench-workers-"))
  try {
    const port = await freePort()
    const env = {
      DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${dbName}`,
      VDB_MASTER_KEY: randomBytes(32).toString("base64"),
      VDB_DATA_DIR: join(dataDir, "data"),
      VDB_API_PORT: String(port),
      VDB_METRICS_PORT: String(await freePort()),
      VDB_LOG_LEVEL: "Warn"
    }
    // Migrate and create the organization with one process first.
    const first = await startServer(env, 1, port, join(dataDir, "server.log"))
    const created = await runVdb(
      ["org", "create", "--name", "bench", "--per-minute", "0", "--per-week", "0", "--json"],
      env
    )
    if (created.code !== 0) throw new Error(created.stderr)
    const { apiKey } = JSON.parse(created.stdout) as { apiKey: string }
    const status = (await fetch(`http://127.0.0.1:${port}${PATH}`, { headers: { authorization: apiKey } })).status
    await first.stop()
    const sides: Record<"one" | "two", Array<LoadStats>> = { one: [], two: [] }
    for (let round = 0; round < ROUNDS; round++) {
      for (const [side, workers] of [["one", 1], ["two", 2]] as const) {
        const server = await startServer(env, workers, port, join(dataDir, "server.log"))
        try {
          sides[side].push(
            await load([port, PATH, apiKey, CONCURRENCY, WARMUP_MS, DURATION_MS, "{}", status], {
              VDB_BENCH_SERVER_PID: String(server.pid),
              VDB_BENCH_DATABASE: dbName
            })
          )
        } finally {
          await server.stop()
        }
      }
    }
    const summary = (runs: ReadonlyArray<LoadStats>) => {
      const mid = runs.find((r) => r.rps === median(runs.map((x) => x.rps)))!
      return {
        rps: mid.rps,
        p50: mid.p50,
        p99: mid.p99,
        loadGeneratorCpuShare: share(mid),
        rounds: runs.map((r) => r.rps)
      }
    }
    const one = summary(sides.one)
    const two = summary(sides.two)
    const result = {
      date: new Date().toISOString(),
      node: process.version,
      machine: { cpus: cpus().length, model: cpus()[0]?.model ?? "unknown" },
      loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
      request: `GET ${PATH} (ApiKey, usage log on; status ${status})`,
      concurrency: CONCURRENCY,
      durationMs: DURATION_MS,
      one,
      two,
      ratio: Math.round((two.rps / one.rps) * 1000) / 1000
    }
    mkdirSync(new URL("./results/", import.meta.url), { recursive: true })
    writeFileSync(new URL("./results/workers.json", import.meta.url), JSON.stringify(result, null, 2) + "\n")
    console.log(JSON.stringify(result, null, 2))
  } finally {
    await psql(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined)
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
