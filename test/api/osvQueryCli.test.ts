import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { refusal, type ServerCli, startServerCli } from "../support/serverCli.ts"

/**
 * `bin/vdb query` (issue 36) as a user runs it: the real CLI against a real `bin/vdb serve api` on
 * a throwaway PostgreSQL database, two OSV records of one package ingested through the CLI.
 */
let cli: ServerCli
/** The organization's credentials, for the API commands. */
let as: Record<string, string> = {}

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

const ok = (args: ReadonlyArray<string>, input?: string) => cli.ok(args, as, input)

beforeAll(async () => {
  cli = await startServerCli()
  as = cli.as(await cli.createOrg("cli-query"))
  await ok(
    ["ingest", "osv", "-", "--json"],
    `${record("PYSEC-2032-1001", "1.5", "Early flaw")}\n${record("PYSEC-2032-1002", "2.0", "Later flaw")}\n`
  )
}, 120_000)

afterAll(() => cli?.stop())

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
      refusal(await cli.run(["query", "--ecosystem", "Nowhere", "--name", "x", "--version", "1"], as))
    )
      .toMatch(/^vdb: .*ecosystem "Nowhere" is not supported/)
    expect(refusal(await cli.run(["query", "--purl", "pkg:pypi/x@1", "--ecosystem", "PyPI"], as)))
      .toBe("vdb: give --purl, or --ecosystem and --name, not both")
  })
})
