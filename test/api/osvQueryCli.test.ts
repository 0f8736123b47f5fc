import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { throwawayDatabase } from "../support/database.ts"
import { type Run, type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"

/**
 * `bin/vdb query` (issue 36) as a user runs it: the real CLI against a real `bin/vdb serve api` on
 * a throwaway PostgreSQL database, two OSV records of one package ingested through the CLI.
 */
let server: RunningServer
let env: Record<string, string>
let as: Record<string, string>
let scope: Scope.Closeable

const record = (id: string, fixed: string, summary: string) =>
  JSON.stringify({
    id,
    modified: "2032-01-01T00:00:00Z",
    aliases: [`CVE-2032-${id.slice(-4)}`],
    summary,
    affected: [{
      package: { ecosystem: "PyPI", name: "Cli_Query.Demo" },
      ranges: [{ type: "ECOSYSTEM", events: [{ introduced: "0" }, { fixed }] }]
    }]
  })

const ok = async (args: ReadonlyArray<string>, input?: string) => {
  const run = await runVdb(args, { ...env, ...as }, input)
  expect(run.code, `${args.join(" ")}: ${run.stderr}`).toBe(0)
  return run
}

/** The one `vdb: ` line a refused command prints (log lines are JSON), with exit 1. */
const refusal = (run: Run) => {
  expect(run.code, run.stderr).toBe(1)
  const lines = run.stderr.split("\n").filter((l) => l !== "" && !l.startsWith("{"))
  expect(lines, run.stderr).toHaveLength(1)
  return lines[0]!
}

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  const db = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
  env = {
    DATABASE_URL: db.url,
    VDB_MASTER_KEY: randomBytes(32).toString("base64"),
    VDB_DATA_DIR: tempDataDir(),
    VDB_LOG_LEVEL: "Warn"
  }
  server = await startServer(env, ["api"])
  as = {}
  const org = JSON.parse(
    (await ok(["org", "create", "--name", "cli-query", "--per-minute", "0", "--per-week", "0", "--json"])).stdout
  ) as {
    uuid: string
    secret: string
  }
  as = { VDB_ORG_UUID: org.uuid, VDB_ORG_SECRET: org.secret, VDB_API_URL: `http://127.0.0.1:${server.ports.api}/v1` }
  await ok(
    ["ingest", "osv", "-", "--json"],
    `${record("PYSEC-2032-1001", "1.5", "Early flaw")}\n${record("PYSEC-2032-1002", "2.0", "Later flaw")}\n`
  )
}, 120_000)

afterAll(async () => {
  await server?.stop()
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

describe("bin/vdb query against a running server (PostgreSQL)", () => {
  it("prints a table of the records affecting a version, by ecosystem and name (normalised as PyPI does)", async () => {
    const run = await ok(["query", "--ecosystem", "PyPI", "--name", "cli-query-demo", "--version", "1.7"])
    const lines = run.stdout.trim().split("\n")
    expect(lines[0]).toMatch(/^id\s+aliases\s+summary$/)
    expect(lines.some((l) => /^PYSEC-2032-1002\s+CVE-2032-1002\s+Later flaw$/.test(l.trim()))).toBe(true)
    expect(run.stdout).not.toContain("PYSEC-2032-1001")
  })

  it("answers the OSV records as JSON for a purl, its version included", async () => {
    const run = await ok(["query", "--purl", "pkg:pypi/cli-query-demo@1.2", "--json"])
    const body = JSON.parse(run.stdout) as { vulns: Array<{ id: string; summary: string; affected: Array<unknown> }> }
    expect(body.vulns.map((v) => v.id)).toEqual(["PYSEC-2032-1001", "PYSEC-2032-1002"])
    expect(body.vulns[0]!.summary).toBe("Early flaw")
    expect(body.vulns[0]!.affected).toHaveLength(1)
    const none = await ok(["query", "--purl", "pkg:pypi/cli-query-demo@2.0"])
    expect(none.stdout.trim()).toBe("no known vulnerability affects this package")
  })

  it("says an ecosystem is not supported, and refuses a package given two ways", async () => {
    expect(
      refusal(await runVdb(["query", "--ecosystem", "Nowhere", "--name", "x", "--version", "1"], { ...env, ...as }))
    )
      .toMatch(/^vdb: .*ecosystem "Nowhere" is not supported/)
    expect(refusal(await runVdb(["query", "--purl", "pkg:pypi/x@1", "--ecosystem", "PyPI"], { ...env, ...as })))
      .toBe("vdb: give --purl, or --ecosystem and --name, not both")
  })
})
