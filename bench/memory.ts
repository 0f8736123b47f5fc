// `npm run bench -- memory [--db postgres|embedded|both] [--settle-seconds N] [--corpus DIR]
// [--idle-wait-seconds N] [--heap-snapshots DIR] [--node-flags "FLAGS"] [--env "K=V ..."]`: resident memory of `bin/vdb serve` (all four services and the
// admin socket, the real wiring) on PostgreSQL and on the embedded database.
//
// For each database: RSS at idle (after start-up settles), its peak while
// `bin/vdb ingest --all CORPUS` runs through the admin socket (the ingestion
// runs inside the server), right after, and every few seconds for the settle
// window (default 60 s): the target is that it comes back within 10 % of idle.
// RSS is the server process's VmRSS from /proc (worker threads included);
// PostgreSQL's own processes are not counted (they are the database's, as with
// any client). `--heap-snapshots DIR` writes a V8 heap snapshot at idle and
// after the ingestion (SIGUSR2, `--heapsnapshot-signal`). Writes
// bench/results/memory.json. `--node-flags` runs the server under extra Node/V8
// flags (to measure one before proposing it for bin/vdb); such a run is
// labelled with them.
import { execFile, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir, totalmem } from "node:os"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { freePort } from "../test/support/processes.ts"
import { psql, scratchDatabaseName } from "./scratchDatabase.ts"

const ROOT = fileURLToPath(new URL("../", import.meta.url))
const ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
const TARGETS = { idleMiB: { postgres: 200, embedded: 400 }, settleWithin: 0.1 }

const args = process.argv.slice(2)
const option = (name: string) => {
  const i = args.indexOf(name)
  return i === -1 ? undefined : args[i + 1]
}
const DBS = (option("--db") ?? "both") === "both"
  ? ["postgres", "embedded"] as const
  : [option("--db") as "postgres" | "embedded"]
const SETTLE_SECONDS = Number(option("--settle-seconds") ?? 60)
/** How long after start-up the idle figure is taken. */
const IDLE_WAIT_SECONDS = Number(option("--idle-wait-seconds") ?? 30)
const CORPUS = resolve(option("--corpus") ?? join(ROOT, "test/fixtures/data"))
const SNAPSHOTS = option("--heap-snapshots")
const NODE_FLAGS = (option("--node-flags") ?? "").split(" ").filter((flag) => flag !== "")
/** `--env "K=V ..."`: extra environment for the server (e.g. glibc's MALLOC_* tunables), a trial like `--node-flags`. */
const EXTRA_ENV = Object.fromEntries(
  (option("--env") ?? "").split(" ").filter((kv) => kv.includes("=")).map((
    kv
  ) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)])
)
const TRIAL = NODE_FLAGS.length > 0 || Object.keys(EXTRA_ENV).length > 0
const node = process.execPath

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const mib = (kib: number) => Math.round(kib / 1024 * 10) / 10
const rssKiB = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
}
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const run = (argv: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((done) =>
    execFile(node, ["--disable-warning=ExperimentalWarning", join(ROOT, "src/cli/main.ts"), ...argv], {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
      maxBuffer: 64 * 1024 * 1024
    }, (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }))
  )

/** A heap snapshot of `pid`, written into `dir` (the child's cwd); resolves once the file is complete. */
const snapshot = async (pid: number, dir: string, label: string) => {
  const before = new Set(readdirSync(dir))
  process.kill(pid, "SIGUSR2")
  for (let i = 0; i < 600; i++) {
    await sleep(500)
    const made = readdirSync(dir).find((f) => f.endsWith(".heapsnapshot") && !before.has(f))
    // V8 writes the file in one go and closes it; a stable size twice in a row means done.
    if (made !== undefined) {
      const size = () => statSync(join(dir, made)).size
      const first = size()
      await sleep(1000)
      if (size() === first && first > 0) return { label, file: join(dir, made), bytes: first }
    }
  }
  return { label, file: "(timed out)", bytes: 0 }
}

const measure = async (db: "postgres" | "embedded") => {
  const work = mkdtempSync(join(tmpdir(), `vdb-bench-memory-${db}-`))
  const dbName = scratchDatabaseName("memory")
  const ports = { api: await freePort(), gateway: await freePort(), site: await freePort(), mcp: await freePort() }
  const env: Record<string, string> = {
    VDB_MASTER_KEY: randomBytes(32).toString("base64"),
    VDB_DATA_DIR: join(work, "data"),
    VDB_API_PORT: String(ports.api),
    VDB_GATEWAY_PORT: String(ports.gateway),
    VDB_SITE_PORT: String(ports.site),
    VDB_MCP_PORT: String(ports.mcp),
    // Idle means idle: no feed runs (and no traffic beyond loopback).
    VDB_SYNC: "off"
  }
  if (db === "postgres") {
    await psql(`CREATE DATABASE ${dbName}`)
    env.DATABASE_URL = ADMIN_URL.replace(/\/postgres$/, `/${dbName}`)
  }
  const snapshotDir = SNAPSHOTS === undefined ? undefined : resolve(SNAPSHOTS, db)
  if (snapshotDir !== undefined) mkdirSync(snapshotDir, { recursive: true })
  const log = openSync(join(work, "server.log"), "a")
  // Through bin/vdb, as a user runs it (its Node flags and malloc setting); extra flags ride NODE_OPTIONS.
  const nodeOptions = [...(snapshotDir === undefined ? [] : ["--heapsnapshot-signal=SIGUSR2"]), ...NODE_FLAGS]
  const child = spawn(join(ROOT, "bin/vdb"), ["serve"], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      ...env,
      ...(nodeOptions.length === 0 ? {} : { NODE_OPTIONS: nodeOptions.join(" ") }),
      ...EXTRA_ENV
    },
    stdio: ["ignore", log, log],
    cwd: snapshotDir ?? work
  })
  const exited = new Promise<void>((r) => child.once("exit", () => r()))
  try {
    const pid = child.pid!
    const started = performance.now()
    for (const port of Object.values(ports)) {
      for (;;) {
        if (child.exitCode !== null) {
          throw new Error(`server exited: ${readFileSync(join(work, "server.log"), "utf8").slice(-2000)}`)
        }
        if (performance.now() - started > 180_000) throw new Error("server not ready within 180 s")
        if (await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false)) break
        await sleep(200)
      }
    }
    const readySeconds = Math.round(performance.now() - started) / 1000
    // Idle: start-up garbage collected and caches at rest (V8's memory reducer runs some seconds
    // after allocation stops), then the median of several samples.
    await sleep(IDLE_WAIT_SECONDS * 1000)
    const idleSamples: Array<number> = []
    for (let i = 0; i < 5; i++) {
      idleSamples.push(rssKiB(pid))
      await sleep(1000)
    }
    const idle = median(idleSamples)
    const snapshots = snapshotDir === undefined ? [] : [await snapshot(pid, snapshotDir, "idle")]

    let peak = 0
    let sampling = true
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, rssKiB(pid))
        await sleep(250)
      }
    })()
    const ingestStarted = performance.now()
    const ingest = await run(["ingest", "--json", "--all", CORPUS], env)
    const ingestSeconds = Math.round(performance.now() - ingestStarted) / 1000
    sampling = false
    await sampler
    if (ingest.code !== 0) throw new Error(`ingest failed (${ingest.code}): ${ingest.stderr.slice(-2000)}`)
    const summary = (() => {
      try {
        const parsed = JSON.parse(ingest.stdout)
        return { items: parsed.items, inserted: parsed.inserted, skipped: parsed.skipped }
      } catch {
        return { output: ingest.stdout.slice(-300) }
      }
    })()
    const afterIngest = rssKiB(pid)
    if (snapshotDir !== undefined) snapshots.push(await snapshot(pid, snapshotDir, "after ingest"))

    const settleStarted = performance.now()
    const settle: Array<{ atS: number; rssMiB: number }> = []
    let returnedAtS: number | undefined
    while (performance.now() - settleStarted < SETTLE_SECONDS * 1000) {
      await sleep(Math.min(5000, SETTLE_SECONDS * 1000 / 6))
      const rss = rssKiB(pid)
      const atS = Math.round(performance.now() - settleStarted) / 1000
      settle.push({ atS, rssMiB: mib(rss) })
      if (returnedAtS === undefined && rss <= idle * (1 + TARGETS.settleWithin)) returnedAtS = atS
    }
    const final = settle.at(-1)?.rssMiB ?? mib(afterIngest)
    return {
      db,
      ...(NODE_FLAGS.length > 0 ? { nodeFlags: NODE_FLAGS.join(" ") } : {}),
      ...(Object.keys(EXTRA_ENV).length > 0 ? { env: EXTRA_ENV } : {}),
      readySeconds,
      idleMiB: mib(idle),
      ingest: { corpus: CORPUS.replace(ROOT, ""), seconds: ingestSeconds, ...summary },
      peakDuringIngestMiB: mib(peak),
      afterIngestMiB: mib(afterIngest),
      settle,
      finalMiB: final,
      finalOverIdle: Math.round((final * 1024 / idle - 1) * 1000) / 1000,
      returnedWithin10PctAtS: returnedAtS ?? null,
      snapshots,
      idleWaitSeconds: IDLE_WAIT_SECONDS,
      target: { idleMiB: TARGETS.idleMiB[db], settleWithin: TARGETS.settleWithin, settleSeconds: SETTLE_SECONDS },
      met: {
        idle: mib(idle) <= TARGETS.idleMiB[db],
        returnsToIdle: returnedAtS !== undefined
      }
    }
  } finally {
    if (child.exitCode === null) child.kill("SIGTERM")
    await exited
    if (db === "postgres") await psql(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined)
    rmSync(work, { recursive: true, force: true })
  }
}

const results = []
for (const db of DBS) {
  console.error(`measuring bin/vdb serve on ${db} …`)
  const result = await measure(db)
  console.error(`  ${JSON.stringify({ ...result, settle: undefined })}`)
  results.push(result)
}
const output = {
  date: new Date().toISOString(),
  node: process.version,
  machine: { cpus: cpus().length, model: cpus()[0]?.model ?? "unknown", memoryMiB: Math.round(totalmem() / 1048576) },
  loadAverage: loadavg().map((n) => Math.round(n * 100) / 100),
  results
}
const resultsDir = join(ROOT, "bench/results")
mkdirSync(resultsDir, { recursive: true })
// A run of one database keeps the other's last figures.
const file = join(resultsDir, "memory.json")
const previous = (() => {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as typeof output
  } catch {
    return undefined
  }
})()
const kept = (previous?.results ?? []).filter((r) => !DBS.includes(r.db))
// A run under trial flags is printed, not recorded: the README reports the server as bin/vdb starts it.
if (!TRIAL) writeFileSync(file, JSON.stringify({ ...output, results: [...results, ...kept] }, null, 2) + "\n")
console.log(JSON.stringify({ ...output, results }, null, 2))
