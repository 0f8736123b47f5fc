import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { throwawayDatabase } from "../support/database.ts"
import { type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"

/**
 * Two `bin/vdb serve api` processes on one PostgreSQL: B has a package's answer cached, A ingests
 * a record that moves the package's fix, and B's very next query answers by the new range.
 */
describe("package queries across processes (PostgreSQL)", () => {
  const scope = Effect.runSync(Scope.make())
  let a: RunningServer
  let b: RunningServer
  let envA: Record<string, string>

  beforeAll(async () => {
    const database = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
    const shared = {
      DATABASE_URL: database.url,
      VDB_MASTER_KEY: randomBytes(32).toString("base64"),
      VDB_LOG_LEVEL: "Warn"
    }
    envA = { ...shared, VDB_DATA_DIR: tempDataDir() }
    a = await startServer(envA, ["api"])
    b = await startServer({ ...shared, VDB_DATA_DIR: tempDataDir() }, ["api"])
  }, 120_000)

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()])
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  const onA = async (args: ReadonlyArray<string>, input?: string) => {
    const run = await runVdb(args, envA, input)
    expect(run.code, run.stderr).toBe(0)
    return run.stdout
  }

  const record = (fixed: string, id = "PYSEC-2032-7") =>
    JSON.stringify({
      id,
      modified: `2032-01-0${fixed === "1.5" ? 1 : 2}T00:00:00Z`,
      affected: [{
        package: { ecosystem: "PyPI", name: "two-process-demo" },
        ranges: [{ type: "ECOSYSTEM", events: [{ introduced: "0" }, { fixed }] }]
      }]
    }) + "\n"

  const queryB = async (apiKey: string, version: string) => {
    const response = await fetch(`http://127.0.0.1:${b.ports.api}/v1/query`, {
      method: "POST",
      headers: { authorization: apiKey, "content-type": "application/json" },
      body: JSON.stringify({ package: { purl: `pkg:pypi/Two_Process.Demo@${version}` } })
    })
    expect(response.status).toBe(200)
    return ((await response.json()) as { vulns: Array<{ id: string }> }).vulns.map((v) => v.id)
  }

  /** B's querybatch answer (its kept per-version results) for the versions, as identifiers per query. */
  const batchB = async (apiKey: string, versions: ReadonlyArray<string>) => {
    const response = await fetch(`http://127.0.0.1:${b.ports.api}/v1/querybatch`, {
      method: "POST",
      headers: { authorization: apiKey, "content-type": "application/json" },
      body: JSON.stringify({
        queries: versions.map((version) => ({ package: { ecosystem: "PyPI", name: "two-process-demo" }, version }))
      })
    })
    expect(response.status).toBe(200)
    return ((await response.json()) as { results: Array<{ vulns?: Array<{ id: string }> }> }).results
      .map((r) => (r.vulns ?? []).map((v) => v.id))
  }

  it("an ingest on A that moves a fix or adds a record: B's next /v1/query answers by it", async () => {
    const org = JSON.parse(
      await onA(["org", "create", "--name", "osv", "--per-minute", "0", "--per-week", "0", "--json"])
    ) as { apiKey: string }
    await onA(["ingest", "osv", "-", "--json"], record("1.5"))
    expect(await queryB(org.apiKey, "1.6")).toEqual([])
    expect(await queryB(org.apiKey, "1.6")).toEqual([])
    expect(await queryB(org.apiKey, "1.4")).toEqual(["PYSEC-2032-7"])
    // Twice: the second answer is the one B keeps with the package.
    for (let n = 0; n < 2; n++) expect(await batchB(org.apiKey, ["1.4", "1.6"])).toEqual([["PYSEC-2032-7"], []])
    await onA(["ingest", "osv", "-", "--json"], record("2.0"))
    expect(await batchB(org.apiKey, ["1.4", "1.6"])).toEqual([["PYSEC-2032-7"], ["PYSEC-2032-7"]])
    expect(await queryB(org.apiKey, "1.6")).toEqual(["PYSEC-2032-7"])
    // A record B's answer was not built from: only the package's key invalidates it.
    await onA(["ingest", "osv", "-", "--json"], record("3.0", "PYSEC-2032-8"))
    expect(await queryB(org.apiKey, "1.6")).toEqual(["PYSEC-2032-7", "PYSEC-2032-8"])
    expect(await batchB(org.apiKey, ["1.6", "2.5"])).toEqual([["PYSEC-2032-7", "PYSEC-2032-8"], ["PYSEC-2032-8"]])
  }, 60_000)
})
