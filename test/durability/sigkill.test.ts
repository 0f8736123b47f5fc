import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, Redacted, Scope } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { randomBytes } from "node:crypto"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { throwawayDatabase } from "../support/database.ts"
import { type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"

/**
 * Issue 8, "Acknowledged writes survive a crash": every admin write the CLI
 * reports as done is followed at once by a SIGKILL of the server (no drain,
 * no close), and checked after a restart on the same data. On PGlite an
 * ingestion used to commit asynchronously and vanish here.
 */
const LOG4SHELL = "CVE-2021-44228"
const ETERNALBLUE = "CVE-2017-0144"
const fixture = (id: string) => fileURLToPath(new URL(`../fixtures/data/sources/mitre/${id}.json`, import.meta.url))
const FIXTURE = fixture(LOG4SHELL)

/**
 * Phase 1 of an ingestion without its phase 2, as a kill between the two
 * transactions leaves it: only PostgreSQL lets the test write beside a
 * running server (PGlite admits one process; test/durability/resume.test.ts
 * covers the store on both).
 */
const storeRawOnly = (url: string, identifier: string) =>
  Effect.runPromise(
    Effect.scoped(Effect.gen(function*() {
      const sql = yield* PgClient.make({ url: Redacted.make(url), maxConnections: 1 })
      const content = JSON.stringify(JSON.parse(readFileSync(fixture(identifier), "utf8")))
      yield* sql`INSERT INTO vuln_raw (source, identifier, content, content_hash) VALUES ('mitre', ${identifier}, ${content}, 'raw-only')`
    })).pipe(Effect.provide(Reactivity.layer), Effect.orDie)
  )

const eventually = async (probe: () => Promise<number>, wanted: number) => {
  const deadline = Date.now() + 15_000
  let last = await probe()
  while (last !== wanted && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200))
    last = await probe()
  }
  return last
}

const scope = Effect.runSync(Scope.make())
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

const backends = [
  { name: "pglite", env: async () => ({ VDB_DATA_DIR: tempDataDir() }) },
  {
    name: "postgresql",
    env: async () => {
      const database = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
      return {
        VDB_DATA_DIR: tempDataDir(),
        DATABASE_URL: database.url,
        VDB_MASTER_KEY: randomBytes(32).toString("base64")
      }
    }
  }
]

interface Credentials {
  readonly uuid: string
  readonly secret: string
  readonly apiKey: string
}

const json = async <A>(args: ReadonlyArray<string>, env: Record<string, string>, input?: string): Promise<A> => {
  const started = Date.now()
  const run = await runVdb(args, env, input)
  if (process.env.VDB_TEST_TIMING) console.error(`${args.slice(0, 2).join(" ")}: ${Date.now() - started} ms`)
  expect(run.code, `${args.join(" ")}: ${run.stderr}`).toBe(0)
  return JSON.parse(run.stdout) as A
}

describe("acknowledged admin writes survive SIGKILL of the server", () => {
  it.concurrent.each(backends)("$name", async ({ env: makeEnv }) => {
    const env: Record<string, string> = { ...(await makeEnv()), VDB_LOG_LEVEL: "Warn" }
    let server: RunningServer = await startServer(env, ["api", "gateway"])
    const crash = async () => {
      expect(await server.stop("SIGKILL")).toBe(null)
      const started = Date.now()
      server = await startServer(env, ["api", "gateway"])
      if (process.env.VDB_TEST_TIMING) console.error(`restart: ${Date.now() - started} ms`)
    }
    const api = (path: string, key: string) =>
      fetch(`http://127.0.0.1:${server.ports.api}/v1/${path}`, { headers: { authorization: key } }).then((r) =>
        r.status
      )
    const records = (id: string, key: string) =>
      fetch(`http://127.0.0.1:${server.ports.api}/v1/vuln/${id}`, { headers: { authorization: key } }).then(async (r) =>
        r.status === 200 ? ((await r.json()) as ReadonlyArray<unknown>).length : -r.status
      )
    try {
      const org = await json<Credentials>([
        "org",
        "create",
        "--name",
        "durable",
        "--per-minute",
        "0",
        "--per-week",
        "0",
        "--json"
      ], env)
      await crash()
      expect(await api(`info/${LOG4SHELL}`, org.apiKey)).toBe(404) // known organization, unknown CVE

      const summary = await json<{ inserted: number }>(["ingest", "mitre", FIXTURE, "--json"], env)
      expect(summary.inserted).toBe(1)
      await crash()
      expect(await records(LOG4SHELL, org.apiKey)).toBe(1)

      if (env.DATABASE_URL !== undefined) await storeRawOnly(env.DATABASE_URL, ETERNALBLUE)
      const rotated = await json<Credentials>(["org", "rotate-secret", org.uuid, "--json"], env)
      await crash()
      expect(await api(`vuln/${LOG4SHELL}`, org.apiKey)).toBe(401)
      expect(await api(`vuln/${LOG4SHELL}`, rotated.apiKey)).toBe(200)
      // The raw-only item is normalised by the restarted server in the background.
      // (`/vuln` answers `[]` while a source is still processing, so count the records.)
      if (env.DATABASE_URL !== undefined) {
        expect(await eventually(() => records(ETERNALBLUE, rotated.apiKey), 1), server.output().stderr).toBe(1)
      }

      const { key } = await json<{ key: string }>(
        ["gateway", "service-key", "create", "--org", org.uuid, "--json"],
        env
      )
      await crash()
      const models = await fetch(`http://127.0.0.1:${server.ports.gateway}/openai/${org.uuid}/v1/models`, {
        headers: { authorization: `Bearer ${key}` }
      })
      expect(models.status).toBe(200)

      const set = await runVdb(
        ["gateway", "provider-key", "set", "--org", org.uuid, "--provider", "openai"],
        env,
        "sk-test-durable"
      )
      expect(set.code, set.stderr).toBe(0)
      await crash()
      const keys = await json<ReadonlyArray<{ provider: string }>>([
        "gateway",
        "provider-key",
        "list",
        "--org",
        org.uuid,
        "--json"
      ], env)
      expect(keys.map((k) => k.provider)).toEqual(["openai"])

      const deactivated = await runVdb(["org", "deactivate", org.uuid], env)
      expect(deactivated.code, deactivated.stderr).toBe(0)
      await crash()
      expect(await api(`vuln/${LOG4SHELL}`, rotated.apiKey)).toBe(403)
    } finally {
      await server.stop("SIGKILL")
    }
  }, 120_000)
})
