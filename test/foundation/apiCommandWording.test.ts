import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runVdb, tempDataDir } from "../support/processes.ts"
import { type Org, refusal, type ServerCli, startServerCli } from "../support/serverCli.ts"

/**
 * What `bin/vdb info|vuln|exploits` and the numeric flags print, as a new user meets them (issue 33):
 * a 429 says when to retry and how the limit is raised, `info` with a GHSA id points to `vuln`,
 * counts are pluralised, a cut title shows it, a word for a number names the range.
 * A real `bin/vdb serve api` on a throwaway PostgreSQL database, two fixture files ingested.
 */
const FIXTURES = fileURLToPath(new URL("../fixtures/data/sources", import.meta.url))

let cli: ServerCli
const ok = (args: ReadonlyArray<string>, extra?: Record<string, string>) => cli.ok(args, extra)
const createOrg = (name: string, perWeek?: number) => cli.createOrg(name, perWeek)
const as = (org: Org) => cli.as(org)

beforeAll(async () => {
  cli = await startServerCli()
  await ok(["ingest", "mitre", `${FIXTURES}/mitre/CVE-2023-46604.json`])
  await ok(["ingest", "nuclei", `${FIXTURES}/nuclei/CVE-2017-5638.cves-json-entry.json`])
}, 120_000)

afterAll(() => cli?.stop())

// Each command starts a Node process: seconds each on a loaded 2-core machine.
describe("API commands", { timeout: 120_000 }, () => {
  it("a 429 says which limit is used up, when to retry (Retry-After) and the command that raises it", async () => {
    // A week's limit: a minute's could roll over between two commands on a loaded machine.
    const org = await createOrg("one-a-week", 1)
    await ok(["info", "CVE-2023-46604"], as(org))
    const line = refusal(await cli.run(["info", "CVE-2023-46604"], as(org)))
    // Before: "vdb: rate limit exceeded".
    expect(line).toMatch(
      new RegExp(
        `^vdb: rate limit exceeded: the organization's 1 request a week is used up; ` +
          `retry in (\\d+ s|\\d+ min|\\d+ h( \\d+ min)?|\\d+ d( \\d+ h)?)( \\(at \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC\\))?\\. ` +
          `To raise the limit, the server's operator runs \`bin/vdb org limits ${org.uuid} --per-week N\` \\(0 = unlimited\\)$`
      )
    )
  })

  it("info with a GHSA id says /info takes CVE ids and names vuln, before any request", async () => {
    const org = await createOrg("ghsa")
    const line = refusal(await cli.run(["info", "GHSA-jfh8-c2jp-5v3q"], as(org)))
    // Before: "GHSA-jfh8-c2jp-5v3q is not known to any data source", although vuln finds it.
    expect(line).toBe(
      "vdb: info takes a CVE id (CVE-2021-44228 or 2021-44228), not \"GHSA-jfh8-c2jp-5v3q\"; " +
        "the records of any identifier: bin/vdb vuln GHSA-jfh8-c2jp-5v3q"
    )
  })

  it("exploits counts in words that agree with the number; vuln marks a cut title with an ellipsis", async () => {
    const org = await createOrg("wording")
    const exploits = await ok(["exploits", "CVE-2017-5638"], as(org))
    // Before: "CVE-2017-5638: 1 exploit records".
    expect(exploits.stdout.split("\n")[0]).toBe("CVE-2017-5638: 1 exploit record")
    const vuln = await ok(["vuln", "CVE-2023-46604"], as(org))
    const row = vuln.stdout.split("\n").find((l) => l.includes("CVE-2023-46604"))!
    // The title has 155 characters; the column keeps 80, the last an ellipsis.
    expect(row).toMatch(/ Apache ActiveMQ, Apache ActiveMQ Legacy OpenWire Module: Unbounded deserializat…$/)
    expect(row.slice(row.indexOf("Apache"))).toHaveLength(80)
  })
})

describe("numeric flags", { timeout: 120_000 }, () => {
  it("a word or an out-of-range number is one sentence naming the flag's range", async () => {
    const org = "00000000-0000-4000-8000-000000000000"
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
      // Before: `--per-minute: invalid value "abc"; expected a string representing a finite number`.
      [
        ["org", "limits", org, "--per-minute", "abc"],
        "vdb: --per-minute must be a whole number >= 0 (0 = unlimited), got abc (see: vdb org limits --help)"
      ],
      [
        ["org", "create", "--name", "n", "--per-week", "1.5"],
        "vdb: --per-week must be a whole number >= 0 (0 = unlimited), got 1.5 (see: vdb org create --help)"
      ],
      [
        ["exploits", "--limit", "abc", "CVE-2017-5638"],
        "vdb: --limit must be a whole number from 1 to 1000, got abc (see: vdb exploits --help)"
      ],
      [
        ["exploits", "--limit", "0", "CVE-2017-5638"],
        "vdb: --limit must be a whole number from 1 to 1000, got 0 (see: vdb exploits --help)"
      ],
      [
        ["exploits", "--offset", "x", "CVE-2017-5638"],
        "vdb: --offset must be a whole number >= 0, got x (see: vdb exploits --help)"
      ],
      [
        ["gateway", "rule", "add", "--org", org, "--name", "r", "--type", "regex", "--priority", "high"],
        "vdb: --priority must be a whole number from -1000000 to 1000000, got high (see: vdb gateway rule add --help)"
      ],
      // Not quoted back: a value that would break the line.
      [
        ["org", "limits", org, "--per-minute", "1\n2"],
        "vdb: --per-minute must be a whole number >= 0 (0 = unlimited) (see: vdb org limits --help)"
      ]
    ]
    const runs = await Promise.all(cases.map(([args]) => runVdb(args, { VDB_DATA_DIR: tempDataDir() })))
    runs.forEach((run, i) => {
      const [args, expected] = cases[i]!
      expect(refusal(run), args.join(" ")).toBe(expected)
      expect(run.stdout, args.join(" ")).toBe("")
    })
  })
})

describe("ingest", () => {
  it("a path that does not exist is named once", async () => {
    // Before: "cannot read /nonexistent: no such file or directory, access '/nonexistent'".
    expect(refusal(await cli.run(["ingest", "--all", "/nonexistent"]))).toBe(
      "vdb: cannot read /nonexistent: no such file or directory"
    )
  })
})
