// Load generator of `npm run bench -- vdb`, run as its own process so it never
// shares an event loop with what it measures. Two modes, same loop shape
// (CONCURRENCY workers, each one request at a time, for DURATION ms after a
// warm-up), one JSON line of statistics on stdout:
//   node bench/vdb/load.ts http <port> <path> <authorization> <concurrency> <warmupMs> <durationMs> [<headersJson> <status>]
//   node bench/vdb/load.ts list <port> <pathsFile> <authorization> <concurrency>   (every path once, no warm-up)
//   node bench/vdb/load.ts sql <databaseUrl> <identifier> <pool> <concurrency> <warmupMs> <durationMs>
//   node bench/vdb/load.ts parts <databaseUrl> <identifier> <orgUuid> <pool> <concurrency> <warmupMs> <durationMs>
// The HTTP client is `../httpClient.ts` (keep-alive over `node:net`, one
// connection per worker), so the server, not the client, is what gets measured.
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient } from "effect/sql"
import { readFileSync } from "node:fs"
import { Invalidation } from "../../src/db/Invalidation.ts"
import { makeSqlVulnStore } from "../../src/vulns/SqlVulnStore.ts"
import { httpConnection, requestBytes } from "../httpClient.ts"
import { type CpuSplit, snapshot, split } from "./cpu.ts"

export interface LoadStats {
  readonly requests: number
  readonly seconds: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  /** CPU milliseconds per 1000 requests over warm-up and measurement, by process role (see cpu.ts). */
  readonly cpuMsPer1000: CpuSplit
}

const perKilo = (ms: number, requests: number) => Math.round((ms / requests) * 10_000) / 10

/** Whose CPU is whose: set by the orchestrator. */
const ROLES = { server: Number(process.env.VDB_BENCH_SERVER_PID ?? 0), database: process.env.VDB_BENCH_DATABASE ?? "" }

const summarise = (
  latencies: Array<number>,
  seconds: number,
  errors: number,
  cpu: CpuSplit,
  total: number
): LoadStats => {
  latencies.sort((a, b) => a - b)
  const pct = (p: number) =>
    latencies.length === 0
      ? 0
      : Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]! * 1000) / 1000
  return {
    requests: latencies.length,
    seconds,
    rps: Math.round(latencies.length / seconds),
    p50: pct(0.5),
    p99: pct(0.99),
    errors,
    cpuMsPer1000: {
      load: perKilo(cpu.load, total),
      server: perKilo(cpu.server, total),
      postgres: perKilo(cpu.postgres, total),
      other: perKilo(cpu.other, total)
    }
  }
}

/**
 * Runs `once` from `concurrency` workers: warm-up first (not recorded), then
 * the measured window. Latency in milliseconds.
 */
const drive = async (
  concurrency: number,
  warmupMs: number,
  durationMs: number,
  once: (worker: number) => Promise<boolean>
) => {
  const latencies: Array<number> = []
  const cpuBefore = snapshot()
  let total = 0
  let errors = 0
  let recording = false
  const warmEnd = performance.now() + warmupMs
  let end = warmEnd + durationMs
  const worker = async (w: number) => {
    while (performance.now() < end) {
      const t = performance.now()
      const ok = await once(w)
      total++
      if (!recording) continue
      latencies.push(performance.now() - t)
      if (!ok) errors++
    }
  }
  const workers = Array.from({ length: concurrency }, (_, w) => worker(w))
  await new Promise((r) => setTimeout(r, Math.max(0, warmEnd - performance.now())))
  recording = true
  const start = performance.now()
  end = start + durationMs
  await Promise.all(workers)
  const seconds = (performance.now() - start) / 1000
  return summarise(latencies, seconds, errors, split(cpuBefore, snapshot(), ROLES), total)
}

/** One path over and over from every worker; a request counts as failed unless it answers `status` (200). */
const runHttp = async (args: ReadonlyArray<string>) => {
  const [port, path, authorization, concurrency, warmupMs, durationMs, headers, status] = args as [
    string,
    string,
    string,
    string,
    string,
    string,
    string | undefined,
    string | undefined
  ]
  const request = requestBytes(port, path, authorization, headers === undefined ? {} : JSON.parse(headers))
  const expected = Number(status ?? 200)
  const connections = await Promise.all(Array.from({ length: Number(concurrency) }, () => httpConnection(Number(port))))
  return drive(
    Number(concurrency),
    Number(warmupMs),
    Number(durationMs),
    async (w) => (await connections[w]!.get(request)) === expected
  )
}

/** Every path of the file once (the cold pass): workers take the next path until none is left; 200 or 404 is an answer. */
const runList = async (args: ReadonlyArray<string>) => {
  const [port, file, authorization, concurrency] = args as [string, string, string, string]
  const paths = readFileSync(file, "utf8").split("\n").filter((p) => p !== "")
  const latencies: Array<number> = []
  const cpuBefore = snapshot()
  let next = 0
  let errors = 0
  const start = performance.now()
  await Promise.all(Array.from({ length: Number(concurrency) }, async () => {
    const connection = await httpConnection(Number(port))
    while (next < paths.length) {
      const request = requestBytes(port, paths[next++]!, authorization, {})
      const t = performance.now()
      const answered = await connection.get(request)
      latencies.push(performance.now() - t)
      if (answered !== 200 && answered !== 404) errors++
    }
  }))
  const seconds = (performance.now() - start) / 1000
  return summarise(latencies, seconds, errors, split(cpuBefore, snapshot(), ROLES), latencies.length)
}

/** The baseline: the same record by identifier, one row, over a pool of the server's size, same driver as the server. */
const runSql = (args: ReadonlyArray<string>) => {
  const [url, identifier, pool, concurrency, warmupMs, durationMs] = args as [
    string,
    string,
    string,
    string,
    string,
    string
  ]
  return Effect.gen(function*() {
    const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: Number(pool) })
    const once = () =>
      Effect.runPromise(sql`SELECT record FROM vuln_records WHERE identifier = ${identifier} LIMIT 1`.pipe(
        Effect.map((rows) => rows.length === 1),
        Effect.orElseSucceed(() => false)
      ))
    return yield* Effect.promise(() => drive(Number(concurrency), Number(warmupMs), Number(durationMs), once))
  }).pipe(Effect.scoped, Effect.provide(Reactivity.layer), Effect.runPromise)
}

/**
 * `--parts`: the API's two statements on their own, same pool and concurrency:
 * the store's `lookup` (through `VulnStore.layer`) and the organization read.
 */
const runParts = (args: ReadonlyArray<string>) => {
  const [url, identifier, orgUuid, pool, concurrency, warmupMs, durationMs] = args as [
    string,
    string,
    string,
    string,
    string,
    string,
    string
  ]
  return Effect.gen(function*() {
    const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: Number(pool) })
    const store = yield* makeSqlVulnStore.pipe(
      Effect.provideService(SqlClient.SqlClient, sql),
      Effect.provide(Invalidation.layerMemory)
    )
    const run = (effect: Effect.Effect<boolean>) =>
      Effect.promise(() =>
        drive(Number(concurrency), Number(warmupMs), Number(durationMs), () => Effect.runPromise(effect))
      )
    const lookup = yield* run(Effect.map(store.lookup(identifier), (l) => l.records.length > 0))
    const org = yield* run(
      sql`SELECT uuid::text AS uuid, name, secret_sealed, is_active, per_minute, per_week, created_at, updated_at
        FROM organizations WHERE uuid = ${orgUuid}::uuid`.pipe(
        Effect.map((rows) => rows.length === 1),
        Effect.orElseSucceed(() => false)
      )
    )
    return { lookup, org, errors: lookup.errors + org.errors }
  }).pipe(Effect.scoped, Effect.provide(Reactivity.layer), Effect.runPromise)
}

const [mode, ...rest] = process.argv.slice(2)
const stats = mode === "http"
  ? await runHttp(rest)
  : mode === "list"
  ? await runList(rest)
  : mode === "sql"
  ? await runSql(rest)
  : mode === "parts"
  ? await runParts(rest)
  : undefined
if (stats === undefined) {
  console.error("usage: load.ts http|list|sql|parts ...")
  process.exit(2)
}
process.stdout.write(JSON.stringify(stats) + "\n")
process.exit(0)
