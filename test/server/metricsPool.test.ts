import { PgClient } from "@effect/sql-pg"
import { Deferred, Effect, Exit, Fiber, Redacted, Scope } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { randomUUID } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../support/processes.ts"
import { startServerOnOwnDatabase } from "../support/serverCli.ts"

/**
 * The database pool gauges (docs/operations.md, "Process") of a real `bin/vdb serve` on PostgreSQL
 * with `VDB_DATABASE_POOL_SIZE=2`: while the test holds a lock on `organizations`, five requests
 * whose credential names an unknown organization each need a connection to look it up; two get
 * one and block on the lock, three wait for the pool, and `/metrics` shows it. Before the gauges
 * existed, neither series was there.
 */
let started: Awaited<ReturnType<typeof startServerOnOwnDatabase>>
let metricsPort: number

const scrape = async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()

const valueOf = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}
const pool = (text: string) => ({
  inUse: valueOf(text, `vdb_db_pool_connections{state="in_use"}`),
  waiting: valueOf(text, "vdb_db_pool_waiting")
})

/** Scrapes until `done` holds (the requests reach the database at their own pace on a loaded machine). */
const scrapeUntil = async (done: (counts: ReturnType<typeof pool>) => boolean) => {
  const deadline = Date.now() + 15_000
  for (;;) {
    const counts = pool(await scrape())
    if (done(counts) || Date.now() > deadline) return counts
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

beforeAll(async () => {
  metricsPort = await freePort()
  started = await startServerOnOwnDatabase(["api"], {
    VDB_METRICS: "on",
    VDB_METRICS_PORT: String(metricsPort),
    VDB_DATABASE_POOL_SIZE: "2"
  })
}, 120_000)

afterAll(async () => {
  await started?.stop()
})

describe("database pool gauges on /metrics", () => {
  it("show connections in use and statements waiting when requests want more than the pool holds", async () => {
    expect(await scrapeUntil((c) => c.inUse === 0 && c.waiting === 0)).toEqual({ inUse: 0, waiting: 0 })

    const scope = Effect.runSync(Scope.make())
    const release = Effect.runSync(Deferred.make<void>())
    const locked = Effect.runSync(Deferred.make<void>())
    // The lock holder: its own connection, outside the server.
    const holder = Effect.runFork(
      Effect.gen(function*() {
        const sql = yield* PgClient.make({ url: Redacted.make(started.env.DATABASE_URL!), maxConnections: 1 })
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`LOCK TABLE organizations IN ACCESS EXCLUSIVE MODE`
          yield* Deferred.succeed(locked, undefined)
          yield* Deferred.await(release)
        }))
      }).pipe(Scope.provide(scope), Effect.provide(Reactivity.layer))
    )
    try {
      await Effect.runPromise(Deferred.await(locked))
      // Spaced out: misses arriving in the same scheduler turn share one read (Organizations).
      const requests: Array<Promise<Response>> = []
      for (let i = 0; i < 5; i++) {
        requests.push(fetch(`http://127.0.0.1:${started.server.ports.api}/v1/vulns/CVE-2021-44228`, {
          headers: { authorization: `ApiKey ${randomUUID()}:${"ab".repeat(32)}` }
        }))
        await new Promise((resolve) => setTimeout(resolve, 150))
      }
      const during = await scrapeUntil((c) => (c.waiting ?? 0) >= 3)
      expect(during.inUse).toBe(2)
      // The background statements (a feed-freshness read every 30 s) may wait too.
      expect(during.waiting).toBeGreaterThanOrEqual(3)
      await Effect.runPromise(Deferred.succeed(release, undefined))
      for (const response of await Promise.all(requests)) expect(response.status).toBe(401)
      expect(await scrapeUntil((c) => c.inUse === 0 && c.waiting === 0)).toEqual({ inUse: 0, waiting: 0 })
    } finally {
      await Effect.runPromise(Deferred.succeed(release, undefined))
      await Effect.runPromise(Fiber.await(holder))
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }, 60_000)
})
