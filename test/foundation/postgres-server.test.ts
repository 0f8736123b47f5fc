import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminQuery, throwawayDatabase } from "../support/database.ts"
import { type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"

describe("bin/vdb serve on PostgreSQL (DATABASE_URL)", () => {
  const scope = Effect.runSync(Scope.make())
  let database: { url: string; name: string; adminUrl: string }
  let server: RunningServer | undefined
  let env: Record<string, string>

  beforeAll(async () => {
    database = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
    env = {
      VDB_DATA_DIR: tempDataDir(),
      DATABASE_URL: database.url,
      VDB_MASTER_KEY: randomBytes(32).toString("base64")
    }
  })
  afterAll(async () => {
    await server?.stop()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  it("migrates, serves every service, and shares the data with the CLI", async () => {
    server = await startServer(env)
    const created = await runVdb(["org", "create", "--name", "pg-org", "--json"], env)
    expect(created.code).toBe(0)
    const list = JSON.parse((await runVdb(["org", "list", "--json"], env)).stdout)
    expect(list.map((o: { name: string }) => o.name)).toEqual(["pg-org"])
  })

  it("refuses another master key for the same database", async () => {
    const run = await runVdb(["org", "list"], {
      ...env,
      VDB_DATA_DIR: tempDataDir(),
      VDB_MASTER_KEY: randomBytes(32).toString("base64")
    })
    expect(run.code).not.toBe(0)
    expect(run.stderr).toContain("is not the key this database was sealed with")
  })

  it("answers /readyz 503 once the database is gone, /healthz still 200", async () => {
    await Effect.runPromise(adminQuery(database.adminUrl, `DROP DATABASE ${database.name} WITH (FORCE)`))
    const ready = await fetch(`http://127.0.0.1:${server!.ports.gateway}/readyz`)
    expect(ready.status).toBe(503)
    const health = await fetch(`http://127.0.0.1:${server!.ports.gateway}/healthz`)
    expect(health.status).toBe(200)
  })
})
