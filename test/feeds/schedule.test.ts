import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { throwawayDatabase } from "../support/database.ts"
import { type FeedMirror, feedMirror, mirrorConfig } from "../support/feedMirror.ts"
import { type RunningServer, startServer, tempDataDir } from "../support/processes.ts"

const KEV = "/cisa-kev/known_exploited_vulnerabilities.json"
const SOURCES = ["cisa-kev", "epss", "exploit-db", "nuclei", "metasploit", "nist-nvd"]
/** Every source on a 4-second tick; a dead process's sources are taken over after 10 s. */
const TICK_MS = 4000
const schedule = Object.fromEntries(
  SOURCES.map((s) => [`VDB_SYNC_INTERVAL_${s.toUpperCase().replaceAll("-", "_")}`, "4s"])
)

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const waitFor = async (what: string, ok: () => boolean, ms: number) => {
  const deadline = Date.now() + ms
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}
const runLines = (server: RunningServer, source: string) =>
  server.output().stderr.split("\n").filter((l) => l.includes(`"feed ${source}: `)).length

/**
 * Two `bin/vdb serve` processes on one PostgreSQL, the schedule on, every
 * feed pointed at the loopback mirror (metasploit at a path it does not have:
 * a source that keeps failing). The mirror's request log is the witness.
 */
describe("the feeds' schedule across two processes (PostgreSQL, effect/cluster)", () => {
  const scope = Effect.runSync(Scope.make())
  let mirror: FeedMirror
  let a: RunningServer
  let b: RunningServer

  beforeAll(async () => {
    mirror = await Effect.runPromise(Scope.provide(feedMirror, scope))
    const database = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
    const shared = {
      ...mirrorConfig(mirror),
      VDB_FEED_METASPLOIT_URL: mirror.url("/metasploit/none.json"),
      ...schedule,
      DATABASE_URL: database.url,
      VDB_MASTER_KEY: randomBytes(32).toString("base64"),
      VDB_SYNC: "on",
      VDB_SYNC_TAKEOVER: "10 seconds",
      VDB_LOG_LEVEL: "Info"
    }
    a = await startServer({ ...shared, VDB_DATA_DIR: tempDataDir() }, ["api"])
    b = await startServer({ ...shared, VDB_DATA_DIR: tempDataDir() }, ["api"])
  }, 120_000)

  afterAll(async () => {
    await Promise.all([a?.stop("SIGKILL"), b?.stop("SIGKILL")])
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  it(
    "runs each source once per tick on one process, never twice at once, and the other takes over a killed one",
    () =>
      body().catch((e) => {
        const logs = (s: RunningServer) =>
          s.output().stderr.split("\n").filter((l) => !l.includes("\"request\"")).join("\n")
        console.log(logs(a), "\n-----\n", logs(b), mirror.requests.map((r) => [r.path, r.status, r.at]))
        throw e
      }),
    120_000
  )

  const body = async () => {
    // The first runs: the whole catalogue fetched once, by one process.
    await waitFor("two KEV runs", () => mirror.requests.filter((r) => r.path === KEV).length >= 2, 30_000)
    const from = Date.now()
    await sleep(5 * TICK_MS)
    const kev = mirror.requests.filter((r) => r.path === KEV && r.at >= from)
    // Five ticks: five requests give or take the window's edges; two processes each running it would be ten.
    expect(kev.length, JSON.stringify(kev)).toBeGreaterThanOrEqual(4)
    expect(kev.length, JSON.stringify(kev)).toBeLessThanOrEqual(6)
    expect(kev.every((r) => r.conditional && r.status === 304)).toBe(true)
    // The tick's owner may move when the second process joins (shards are rebalanced); the count above is across both.
    // kill -9 the process that ran KEV last: the other one takes it over.
    const lastRun = (server: RunningServer) =>
      Math.max(
        0,
        ...server.output().stderr.split("\n").filter((l) => l.includes(`"feed cisa-kev: `)).map((l) =>
          Date.parse(JSON.parse(l).timestamp)
        )
      )
    const [owner, other] = lastRun(a) >= lastRun(b) ? [a, b] : [b, a]
    const before = runLines(other, "cisa-kev")
    await owner.stop("SIGKILL")
    const killedAt = Date.now()
    await waitFor("the other process to run KEV", () => runLines(other, "cisa-kev") > before + 1, 45_000)
    const takeover = Date.now() - killedAt
    expect(takeover).toBeLessThan(30_000)
    // Once per tick from then on too (a late tick may run close to the next one on a loaded machine: counted, not spaced).
    const after = mirror.requests.filter((r) => r.path === KEV && r.at >= killedAt)
    expect(after.length).toBeLessThanOrEqual(Math.ceil((Date.now() - killedAt) / TICK_MS) + 1)

    // metasploit failed on every tick in both processes' lifetimes, and warned once for the whole streak.
    const warnings = [a, b].flatMap((s) =>
      s.output().stderr.split("\n").filter((l) => l.includes("feed metasploit failed"))
    )
    expect(mirror.requests.filter((r) => r.path === "/metasploit/none.json").length).toBeGreaterThan(3)
    expect(warnings.length, warnings.join("\n")).toBe(1)
    expect(warnings[0]).toMatch(/next try at \d{4}-/)
  }
})
