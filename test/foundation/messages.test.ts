import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { freePort, type Run, type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"

/** Library names and phrasings a person cannot act on. */
const INTERNAL_NAMES =
  /PgConnection|Schema validation failed|Transport error|StatusCode error|SocketCloseError|SocketReadError|SchemaError|ConfigError|SqlError|RpcClientError|ServeError/

/** What every refused command prints: exactly one `vdb: ` line on stderr, in words, and exit 1. */
const expectOneHumanLine = (run: Run) => {
  expect(run.code).toBe(1)
  const lines = run.stderr.split("\n").filter((l) => l !== "" && !l.startsWith("{"))
  expect(lines, run.stderr).toHaveLength(1)
  expect(lines[0]).toMatch(/^vdb: \S/)
  expect(lines[0]).not.toMatch(INTERNAL_NAMES)
  expect(lines[0]!.length).toBeLessThan(400)
  return lines[0]!
}

const logLines = (stderr: string) =>
  stderr.split("\n").filter((l) => l.startsWith("{")).map((l) =>
    JSON.parse(l) as { message: string; annotations: Record<string, unknown> }
  )

const listenOn = (port: number): Promise<Server> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => resolve(server))
  })

// Commands that need no database run concurrently; those that do share one running server (admin socket),
// since every in-process command opens the embedded database and runs migrations (seconds each).
describe.concurrent("messages that need no database", () => {
  const home = mkdtempSync(join(tmpdir(), "vdb-home-"))
  const credentials = { VDB_ORG_UUID: "00000000-0000-4000-8000-000000000000", VDB_ORG_SECRET: "0".repeat(64) }

  it("a busy port names the address and the variable", async () => {
    const port = await freePort()
    const squatter = await listenOn(port)
    try {
      const run = await runVdb(["serve", "api"], { VDB_DATA_DIR: tempDataDir(), VDB_API_PORT: String(port) })
      const line = expectOneHumanLine(run)
      expect(line).toBe(`vdb: cannot listen on 127.0.0.1:${port} (VDB_API_PORT): address already in use`)
    } finally {
      squatter.close()
    }
  })

  it("a refused organization name or limit, with no server, is refused as the line is parsed: nothing is created", async () => {
    const dataDir = tempDataDir()
    const cases: Array<[ReadonlyArray<string>, string]> = [
      [["org", "create", "--name", ""], "vdb: --name: the organization name is empty (see: vdb org create --help)"],
      [["org", "create", "--name", "two\nlines"], "vdb: --name: the organization name must be printable text"],
      [
        ["org", "create", "--name", "ok", "--per-week", "-1"],
        "vdb: --per-week must be a whole number >= 0 (0 = unlimited), got -1"
      ],
      [
        ["org", "limits", "00000000-0000-4000-8000-000000000000", "--per-minute", "abc"],
        "vdb: --per-minute must be a whole number >= 0 (0 = unlimited), got abc"
      ]
    ]
    for (const [args, start] of cases) {
      expect(expectOneHumanLine(await runVdb(args, { VDB_DATA_DIR: dataDir }))).toContain(start)
    }
    // Before: the data directory, its master key and the embedded database were made first.
    expect(existsSync(dataDir)).toBe(false)
  })

  it("an address a command would send a credential to must be an http(s) URL; the line names where it came from", async () => {
    const env = { HOME: home, ...credentials }
    const host = expectOneHumanLine(await runVdb(["info", "CVE-2021-44228"], { ...env, VDB_HOST: "a b" }))
    // Before: "VDB_API_URL is not a valid URL", with VDB_API_URL unset.
    expect(host).toBe("vdb: VDB_HOST with VDB_API_PORT is not usable as an address: not a URL")
    const xdg = mkdtempSync(join(tmpdir(), "vdb-xdg-"))
    mkdirSync(join(xdg, "vdb"))
    const file = join(xdg, "vdb", "credentials.json")
    writeFileSync(
      file,
      JSON.stringify({
        type: "apikey",
        orgUuid: credentials.VDB_ORG_UUID,
        apiKey: `ApiKey ${credentials.VDB_ORG_UUID}:00`,
        api: "file:///etc/passwd"
      })
    )
    // Before: "cannot reach null".
    for (const args of [["info", "CVE-2021-44228"], ["auth", "verify"]]) {
      const line = expectOneHumanLine(await runVdb(args, { HOME: home, XDG_CONFIG_HOME: xdg }))
      expect(line).toBe(`vdb: the api in ${file} is not usable as an address: an http or https URL is expected`)
    }
  })

  it("a malformed setting names the variable", async () => {
    const port = expectOneHumanLine(await runVdb(["serve"], { VDB_DATA_DIR: tempDataDir(), VDB_API_PORT: "abc" }))
    expect(port).toMatch(/^vdb: invalid VDB_API_PORT: /)
    // Before: the logging layer's own failure printed nothing at all.
    const level = expectOneHumanLine(
      await runVdb(["org", "list"], { VDB_DATA_DIR: tempDataDir(), VDB_LOG_LEVEL: "loud" })
    )
    expect(level).toMatch(/^vdb: invalid VDB_LOG_LEVEL: /)
  })

  it("info when no server answers says where it tried and what to check", async () => {
    const port = await freePort()
    const env = { HOME: home, VDB_API_URL: `http://127.0.0.1:${port}/v1`, ...credentials }
    // --jwt signs in first: an unreachable server is not reported as a refused sign-in either.
    const runs = await Promise.all(
      [["info", "CVE-2021-44228"], ["info", "--jwt", "CVE-2021-44228"]].map((args) => runVdb(args, env))
    )
    for (const run of runs) {
      const line = expectOneHumanLine(run)
      expect(line).toContain(`cannot reach http://127.0.0.1:${port} (connection refused)`)
      expect(line).not.toContain("CVE-2021-44228")
    }
  })

  it("a 10k-character identifier is refused without being echoed", async () => {
    const line = expectOneHumanLine(await runVdb(["info", "A".repeat(10_000)], { HOME: home, ...credentials }))
    expect(line).toBe("vdb: identifier longer than 100 characters")
  })

  it("a server that goes away mid-command is reported as such, not as a socket error", async () => {
    const dataDir = tempDataDir()
    mkdirSync(dataDir, { recursive: true })
    // Stands in for a server stopped while handling the request: it accepts, reads, then hangs up.
    const vanishing = createServer((socket) => socket.once("data", () => socket.destroy()))
    await new Promise<void>((resolve) => vanishing.listen(join(dataDir, "admin.sock"), resolve))
    try {
      const line = expectOneHumanLine(await runVdb(["org", "list"], { VDB_DATA_DIR: dataDir }))
      expect(line).toMatch(/^vdb: the vdb server closed the admin connection/)
    } finally {
      vanishing.close()
    }
  })

  it("a command line that does not parse is one line naming the problem and the help, not the whole help", async () => {
    const cases: ReadonlyArray<readonly [ReadonlyArray<string>, string]> = [
      [
        ["org", "limits", "x", "--per-minute", "abc"],
        "vdb: --per-minute must be a whole number >= 0 (0 = unlimited), got abc (see: vdb org limits --help)"
      ],
      [
        ["serve", "nope"],
        "vdb: <service>: invalid value \"nope\"; expected \"api\" | \"gateway\" | \"site\" | \"mcp\" (see: vdb serve --help)"
      ],
      // A value that would break the line (or flood it) is not quoted back: the library quoted any value whole.
      [
        ["serve", "1\n2"],
        "vdb: <service>: invalid value; expected \"api\" | \"gateway\" | \"site\" | \"mcp\" (see: vdb serve --help)"
      ],
      [["org", "create"], "vdb: Missing required flag: --name (see: vdb org create --help)"],
      [["org", "nosuch"], "vdb: Unknown subcommand \"nosuch\" for \"vdb org\" (see: vdb org --help)"]
    ]
    for (const [args, expected] of cases) {
      const run = await runVdb(args, { HOME: home, VDB_DATA_DIR: tempDataDir() })
      expect(expectOneHumanLine(run), args.join(" ")).toBe(expected)
      expect(run.stdout, args.join(" ")).toBe("")
    }
  })

  it("the no-credentials message names only commands that exist", async () => {
    const line = expectOneHumanLine(await runVdb(["info", "CVE-2021-44228"], { HOME: home }))
    expect(line).toContain("VDB_ORG_UUID")
    expect(line).not.toMatch(/sign in/i)
    const commands = [...line.matchAll(/bin\/vdb ((?:[a-z][a-z-]* ?)+)/g)].map((m) => m[1]!.trim().split(" "))
    expect(commands.length).toBeGreaterThan(0)
    for (const command of commands) {
      const help = await runVdb([...command, "--help"], { HOME: home, VDB_DATA_DIR: tempDataDir() })
      expect(help.stdout, command.join(" ")).toContain("USAGE")
      expect(help.stdout, command.join(" ")).not.toContain("Unknown subcommand")
    }
  })
})

describe("with a running server", () => {
  const env = { VDB_DATA_DIR: tempDataDir() }
  let server: RunningServer | undefined
  afterAll(async () => {
    await server?.stop()
  })

  it("announces the services as one JSON log line, nothing on stdout, and hints at the first organization", async () => {
    server = await startServer(env, ["api"])
    const { stderr, stdout } = server.output()
    expect(stdout).toBe("")
    const logs = logLines(stderr)
    const serving = logs.find((l) => l.message === "vdb is serving")
    expect(serving?.annotations).toMatchObject({ api: `http://127.0.0.1:${server.ports.api}` })
    expect(logs.some((l) => l.message.includes("bin/vdb org create --name NAME"))).toBe(true)
  })

  it("usage --org with a malformed UUID says so (not a database error)", async () => {
    const line = expectOneHumanLine(await runVdb(["usage", "--org", "zzz"], env))
    expect(line).toBe(`vdb: --org: not a UUID: "zzz"`)
  })

  it("organization names: control characters and over-long names are refused with one line, writing nothing", async () => {
    const before = await runVdb(["org", "list", "--json"], env)
    expect(before.code).toBe(0)
    const refused = await Promise.all(
      ["two\nlines", "tab\there", "x".repeat(201)].map((name) => runVdb(["org", "create", "--name", name], env))
    )
    for (const run of refused) {
      const line = expectOneHumanLine(run)
      expect(line).toMatch(/^vdb: --name: the organization name /)
      expect(line).not.toContain("x".repeat(201))
    }
    expect((await runVdb(["org", "list", "--json"], env)).stdout).toBe(before.stdout)
  })

  it("organization names: printable non-Latin text is accepted and `org list` keeps one row each", async () => {
    const created = await runVdb(["org", "create", "--name", "Ünïcødé 株式会社", "--json"], env)
    expect(created.code).toBe(0)
    expect(JSON.parse(created.stdout).name).toBe("Ünïcødé 株式会社")
    const list = await runVdb(["org", "list"], env)
    expect(list.stdout.trim().split("\n")).toHaveLength(2)
    const line = expectOneHumanLine(
      await runVdb(["org", "limits", JSON.parse(created.stdout).uuid, "--per-minute", "-3"], env)
    )
    expect(line).toBe(
      "vdb: --per-minute must be a whole number >= 0 (0 = unlimited), got -3 (see: vdb org limits --help)"
    )
  })

  it("after a restart with an organization, the first-organization hint is gone", async () => {
    expect(await server!.stop()).toBe(0)
    server = await startServer(env, ["api"])
    const logs = logLines(server.output().stderr)
    expect(logs.some((l) => l.message === "vdb is serving")).toBe(true)
    expect(logs.some((l) => l.message.includes("org create"))).toBe(false)
  })
})
