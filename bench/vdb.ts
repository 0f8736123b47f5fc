// `npm run bench -- vdb`: /v1/vuln/{id} throughput with authentication, rate
// limiting (limits 0) and the usage log on, against a bare single-row
// PostgreSQL fetch of the same record, in the same run. Writes bench/results/vdb.json.
import { createHash, randomBytes } from "node:crypto"
import { writeFileSync, mkdirSync } from "node:fs"
import { createServer } from "node:http"
import { Agent, request } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import * as Reactivity from "effect/reactivity/Reactivity"
import { ApiRoutes } from "../src/api/ApiRoutes.ts"
import { layerPostgres } from "../src/db/Database.ts"
import { MigrationsLayer } from "../src/db/Migrations.ts"
import { Organizations } from "../src/orgs/Organizations.ts"
import { MasterKey } from "../src/secrets/MasterKey.ts"
import { SecretBox } from "../src/secrets/SecretBox.ts"
import { VulnStore } from "../src/vulns/VulnStore.ts"

const ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
const CVE = "CVE-2021-44228"
const DURATION_MS = Number(process.argv[2] ?? 5000)
const CONCURRENCY = 32
const POOL = 10

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
    cna: { title: "Apache Log4j2 JNDI features do not protect against attacker controlled LDAP", descriptions: [{ lang: "en", value: "x".repeat(800) }] },
    adp: [{ x_dataSource: "mitre", x_aliases: [] }]
  }
}

interface Stats {
  readonly requests: number
  readonly seconds: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
}

/** Runs `once` from CONCURRENCY workers for DURATION_MS; latency in ms. */
const measure = (once: () => Promise<void>): Promise<Stats> =>
  new Promise((resolve, reject) => {
    const latencies: Array<number> = []
    const start = performance.now()
    const end = start + DURATION_MS
    let running = CONCURRENCY
    const worker = async () => {
      while (performance.now() < end) {
        const t = performance.now()
        await once()
        latencies.push(performance.now() - t)
      }
      if (--running === 0) {
        const seconds = (performance.now() - start) / 1000
        latencies.sort((a, b) => a - b)
        const pct = (p: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]! * 100) / 100
        resolve({ requests: latencies.length, seconds, rps: Math.round(latencies.length / seconds), p50: pct(0.5), p99: pct(0.99) })
      }
    }
    for (let i = 0; i < CONCURRENCY; i++) worker().catch(reject)
  })

const main = Effect.gen(function*() {
  const dbName = `vdb_bench_${Date.now().toString(36)}`
  yield* admin(`CREATE DATABASE ${dbName}`)
  yield* Effect.addFinalizer(() => admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).pipe(Effect.ignore))
  const url = new URL(ADMIN_URL)
  url.pathname = `/${dbName}`

  const Sql = layerPostgres(Redacted.make(url.toString()), POOL).pipe(Layer.orDie)
  const Box = SecretBox.layer.pipe(Layer.provide(Layer.succeed(MasterKey, MasterKey.fromBytes(randomBytes(32)))))
  const Deps = Layer.mergeAll(Organizations.layer, VulnStore.layer).pipe(
    Layer.provideMerge(Layer.mergeAll(Sql, Box)),
    Layer.provideMerge(Layer.effectDiscard(Effect.void))
  )
  const deps = yield* Layer.build(Deps)
  yield* Layer.build(MigrationsLayer.pipe(Layer.provide(Layer.succeedContext(deps)), Layer.orDie))

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
  const org = yield* Context.get(deps, Organizations).create({ name: "bench", perMinute: 0, perWeek: 0 })

  const server = HttpRouter.serve(ApiRoutes, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
    Layer.provide(Layer.succeedContext(deps))
  )
  const port = (Context.get(yield* Layer.build(server), HttpServer.HttpServer).address as unknown as { port: number }).port

  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  const get = () =>
    new Promise<void>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, path: `/v1/vuln/${CVE}`, agent, headers: { authorization: org.apiKey } }, (res) => {
        if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`))
        res.resume()
        res.on("end", () => resolve())
      })
      req.on("error", reject)
      req.end()
    })

  const sql = Context.get(deps, SqlClient.SqlClient)
  const bare = () =>
    Effect.runPromise(sql`SELECT record FROM vuln_records WHERE identifier = ${CVE} LIMIT 1`.pipe(Effect.orDie)).then(() => undefined)

  yield* Effect.promise(() => get())
  if (process.env.VDB_BENCH_PARTS === "1") {
    const orgs = Context.get(deps, Organizations)
    console.log("lookup", yield* Effect.promise(() => measure(() => Effect.runPromise(store.lookup(CVE)).then(() => undefined))))
    console.log("secretOf", yield* Effect.promise(() => measure(() => Effect.runPromise(orgs.secretOf(org.uuid)).then(() => undefined))))
  }
  // Warm both paths, then measure each in turn in this run.
  yield* Effect.promise(() => measure(bare))
  const bareStats = yield* Effect.promise(() => measure(bare))
  const apiStats = yield* Effect.promise(() => measure(get))
  agent.destroy()

  const result = {
    benchmark: "vdb /v1/vuln/{id}",
    at: new Date().toISOString(),
    durationMs: DURATION_MS,
    concurrency: CONCURRENCY,
    pool: POOL,
    api: { ...apiStats, auth: "ApiKey", rateLimit: "limits 0", usageLog: "on" },
    bareFetch: bareStats,
    ratio: Math.round((apiStats.rps / bareStats.rps) * 1000) / 1000,
    target: 0.5
  }
  mkdirSync(new URL("./results/", import.meta.url), { recursive: true })
  writeFileSync(new URL("./results/vdb.json", import.meta.url), JSON.stringify(result, null, 2) + "\n")
  console.log(JSON.stringify(result, null, 2))
})

Effect.runPromise(Effect.scoped(main) as Effect.Effect<void, unknown>).then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
