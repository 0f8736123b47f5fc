import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, Redacted, Scope } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { throwawayDatabase } from "../support/database.ts"
import { type FeedMirror, feedMirror, mirrorConfig } from "../support/feedMirror.ts"
import { baseEnv, runVdb, startServer, tempDataDir, VDB } from "../support/processes.ts"

const EPSS = "/epss/epss_scores-current.csv.gz"
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Every stored raw record and normalised row of a database, for comparing two of them. */
const storeRows = (url: string) =>
  Effect.runPromise(
    Effect.scoped(Effect.gen(function*() {
      const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: 1 })
      const raw = yield* sql`SELECT source, identifier, content_hash FROM vuln_raw ORDER BY 1, 2`.values
      const normalised = yield* sql`SELECT count(*)::int AS n FROM vuln_normalised`
      const epss = yield* sql`SELECT count(*)::int AS n FROM vuln_epss`
      return { raw, normalised: normalised[0]!.n, epss: epss[0]!.n }
    })).pipe(Effect.provide(Reactivity.layer))
  )

describe("vdb sync from the command line", () => {
  const scope = Effect.runSync(Scope.make())
  let mirror: FeedMirror
  let feeds: Record<string, string>

  beforeAll(async () => {
    mirror = await Effect.runPromise(Scope.provide(feedMirror, scope))
    feeds = {
      ...mirrorConfig(mirror),
      VDB_FEED_METASPLOIT_URL: mirror.url("/metasploit/none.json"),
      VDB_MASTER_KEY: randomBytes(32).toString("base64")
    }
  })
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  it(
    "goes over the admin socket while a server holds the embedded database, and exits 1 if a source failed",
    async () => {
      const env = { ...feeds, VDB_DATA_DIR: tempDataDir(), VDB_LOG_LEVEL: "Warn" }
      const server = await startServer(env, ["api"])
      try {
        // In-process it could not open the database the server holds: the answer is the server's.
        const run = await runVdb(["sync", "cisa-kev", "epss", "--json"], env)
        expect(run.code, run.stderr).toBe(0)
        const outcomes = JSON.parse(run.stdout) as Array<{ source: string; status: string; changed: number }>
        expect(outcomes.map((o) => [o.source, o.status])).toEqual([["cisa-kev", "updated"], ["epss", "updated"]])
        expect(outcomes[0]!.changed).toBe(44)
        // Off a terminal: plain lines, never the progress view's redrawing (test/feeds/syncTerminal.test.ts).
        expect(run.stderr).toContain("cisa-kev: fetching…")
        expect(run.stderr).not.toMatch(/\r|\x1b\[/)

        const failing = await runVdb(["sync", "cisa-kev", "metasploit"], env)
        expect(failing.code).toBe(1)
        expect(failing.stdout).toContain("cisa-kev: unchanged")
        expect(failing.stdout).toMatch(/metasploit: failed, .*404/)

        const status = await runVdb(["sync", "status", "--json"], env)
        expect(status.code, status.stderr).toBe(0)
        const rows = Object.fromEntries(
          (JSON.parse(status.stdout) as Array<Record<string, unknown>>).map((r) => [r.source, r])
        )
        expect(rows["cisa-kev"]).toMatchObject({ recordsChanged: 0, lastError: null, interval: "1d" })
        expect((rows["cisa-kev"]!.cursor as Record<string, string>).etag).toMatch(/^"/)
        expect(rows["metasploit"]).toMatchObject({ lastErrorKind: "HttpStatus", failures: 1 })
        expect(Date.parse(rows["cisa-kev"]!.nextRunAt as string)).toBeGreaterThan(Date.now())
        const table = await runVdb(["sync", "status"], env)
        expect(table.stdout).toMatch(
          /^SOURCE\s+LAST SUCCESS\s+LAST ATTEMPT\s+CHANGED\s+FAILED\s+CURSOR\s+INTERVAL\s+NEXT RUN\s+ERROR/
        )

        // No VDB_VULNCHECK_TOKEN: VulnCheck's feeds are off and say why, rather than looking never run.
        expect(rows["cisa-kev"]).toMatchObject({ off: null })
        for (const source of ["vulncheck-kev", "vulncheck-nvd"]) {
          expect(rows[source]).toMatchObject({ off: "needs VDB_VULNCHECK_TOKEN", nextRunAt: null, lastAttemptAt: null })
          expect(table.stdout).toMatch(
            new RegExp(`^${source}\\s.*\\soff \\(needs VDB_VULNCHECK_TOKEN\\)\\s+-\\s*$`, "m")
          )
        }
        const off = await runVdb(["sync", "vulncheck-kev"], env)
        expect(off.code, off.stderr).toBe(0)
        expect(off.stdout.trim()).toBe("vulncheck-kev: off (needs VDB_VULNCHECK_TOKEN)")
      } finally {
        await server.stop()
      }
    },
    180_000
  )

  it(
    "kill -9 mid-sync, then the same sync again: the store is what one clean sync gives, with no duplicates (PostgreSQL)",
    async () => {
      const killed = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
      const clean = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
      const envOf = (url: string) => ({
        ...feeds,
        DATABASE_URL: url,
        VDB_DATA_DIR: tempDataDir(),
        VDB_LOG_LEVEL: "Warn"
      })

      // KEV stored, then EPSS's download stalls half-way; the CLI is killed there.
      mirror.fault(EPSS, { kind: "stall" })
      const asked = mirror.requests.length
      const child = spawn(VDB, ["sync", "cisa-kev", "epss"], {
        env: { ...baseEnv(), ...envOf(killed.url) },
        stdio: "ignore"
      })
      const exited = new Promise((r) => child.once("exit", r))
      const deadline = Date.now() + 120_000
      while (!mirror.requests.slice(asked).some((r) => r.path === EPSS)) {
        if (Date.now() > deadline) throw new Error("the sync never asked for EPSS")
        await sleep(100)
      }
      await sleep(500)
      child.kill("SIGKILL")
      await exited
      mirror.fault(EPSS, undefined)

      const again = await runVdb(["sync", "cisa-kev", "epss", "--json"], envOf(killed.url))
      expect(again.code, again.stderr).toBe(0)
      // KEV's cursor had moved (304); EPSS's had not, so it is fetched whole and stored.
      expect((JSON.parse(again.stdout) as Array<{ status: string }>).map((o) => o.status)).toEqual([
        "unchanged",
        "updated"
      ])
      const once = await runVdb(["sync", "cisa-kev", "epss"], envOf(clean.url))
      expect(once.code, once.stderr).toBe(0)
      const [a, b] = await Promise.all([storeRows(killed.url), storeRows(clean.url)])
      expect(a.raw.length).toBeGreaterThan(44)
      expect(a).toEqual(b)
    },
    240_000
  )
})
