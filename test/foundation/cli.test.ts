import { createHmac } from "node:crypto"
import { existsSync, statSync, unlinkSync } from "node:fs"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { type Run, type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"

const hmac = (secret: string, uuid: string) => createHmac("sha256", secret).update(uuid).digest("hex")

describe("bin/vdb org, embedded database", () => {
  const dataDir = tempDataDir()
  const env = { VDB_DATA_DIR: dataDir }
  let server: RunningServer | undefined
  afterAll(async () => {
    await server?.stop()
  })

  it("creates an organization with no server running, generating the master key once (0600)", async () => {
    const run = await runVdb(["org", "create", "--name", "acme", "--json"], env)
    expect(run.code).toBe(0)
    const created = JSON.parse(run.stdout)
    expect(Object.keys(created).sort()).toEqual(["apiKey", "name", "secret", "uuid"])
    expect(created.secret).toMatch(/^[0-9a-f]{64}$/)
    expect(created.apiKey).toBe(`ApiKey ${created.uuid}:${hmac(created.secret, created.uuid)}`)
    expect(statSync(join(dataDir, "master.key")).mode & 0o777).toBe(0o600)
    expect(run.stderr).toContain("generated a new master key")
    expect(run.stderr).not.toContain(created.secret)
  })

  it("goes through the running server's admin socket (0600) and the data survives a restart", async () => {
    server = await startServer(env)
    const socket = join(dataDir, "admin.sock")
    expect(statSync(socket).mode & 0o777).toBe(0o600)
    const run = await runVdb(["org", "create", "--name", "via-socket", "--per-minute", "0", "--json"], env)
    expect(run.code).toBe(0)
    const created = JSON.parse(run.stdout)
    expect(created.apiKey).toBe(`ApiKey ${created.uuid}:${hmac(created.secret, created.uuid)}`)
    for (const port of Object.values(server.ports)) {
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`)
      expect(ready.status).toBe(200)
    }
    const log = server.output().stderr.split("\n").filter((l) => l.includes("\"route\":\"/readyz\""))
    expect(log.length).toBeGreaterThanOrEqual(4)
    expect(JSON.parse(log[0]!).annotations).toMatchObject({ method: "GET", status: 200 })
    expect(JSON.parse(log[0]!).annotations.requestId).toMatch(/^[0-9a-f-]{36}$/)
    expect(server.output().stderr).not.toContain(created.secret)
    expect(await server.stop("SIGTERM")).toBe(0)
    expect(existsSync(socket)).toBe(false)
    server = undefined
    const list = await runVdb(["org", "list", "--json"], env)
    expect(list.code).toBe(0)
    const names = JSON.parse(list.stdout).map((o: { name: string }) => o.name)
    expect(names).toEqual(["acme", "via-socket"])
  })

  it("manages an organization: show, limits, deactivate, rotate", async () => {
    const created = JSON.parse((await runVdb(["org", "create", "--name", "ops", "--json"], env)).stdout)
    const limits = JSON.parse((await runVdb(["org", "limits", created.uuid, "--per-week", "0", "--json"], env)).stdout)
    expect([limits.perMinute, limits.perWeek]).toEqual([5, 0])
    const off = JSON.parse((await runVdb(["org", "deactivate", created.uuid, "--json"], env)).stdout)
    expect(off.isActive).toBe(false)
    const rotated = JSON.parse((await runVdb(["org", "rotate-secret", created.uuid, "--json"], env)).stdout)
    expect(rotated.secret).not.toBe(created.secret)
    expect(rotated.apiKey).toBe(`ApiKey ${created.uuid}:${hmac(rotated.secret, created.uuid)}`)
  })

  it("rejects bad input with one line on stderr and a non-zero exit", async () => {
    const before = (await runVdb(["org", "list", "--json"], env)).stdout
    for (
      const args of [
        ["org", "show", "not-a-uuid"],
        ["org", "show", "00000000-0000-4000-8000-000000000000"],
        ["org", "create", "--name", "neg", "--per-minute", "-1"]
      ]
    ) {
      const run = await runVdb(args, env)
      expect(run.code).not.toBe(0)
      expect(run.stderr.trim().split("\n")).toHaveLength(1)
      expect(run.stderr).toMatch(/^vdb: /)
    }
    expect((await runVdb(["org", "list", "--json"], env)).stdout).toBe(before)
  })

  it("refuses to start when master.key is deleted while data exists", async () => {
    unlinkSync(join(dataDir, "master.key"))
    const run = await runVdb(["org", "list"], env)
    expect(run.code).not.toBe(0)
    expect(run.stderr).toContain("master.key is missing")
    expect(existsSync(join(dataDir, "master.key"))).toBe(false)
  })
})

describe("bin/vdb with DATABASE_URL", () => {
  /**
   * `bin/vdb args --help`, run once per argument list in this file: both help tests read
   * `--help`, `org --help` and `serve --help` (each run is a process start, seconds on 2 cores).
   */
  const helpRuns = new Map<string, Promise<Run>>()
  const help = (args: ReadonlyArray<string>) => {
    const key = args.join("\0")
    if (!helpRuns.has(key)) helpRuns.set(key, runVdb([...args, "--help"], { VDB_DATA_DIR: tempDataDir() }))
    return helpRuns.get(key)!
  }

  it("fails with a clear message when no master key is configured", async () => {
    const run = await runVdb(["org", "list"], {
      VDB_DATA_DIR: tempDataDir(),
      DATABASE_URL: "postgres://postgres@127.0.0.1:5432/postgres"
    })
    expect(run.code).not.toBe(0)
    expect(run.stderr).toContain("VDB_MASTER_KEY is required when DATABASE_URL is set")
  })

  it("prints help for every command", async () => {
    const helps = [[], ["org"], ["org", "create"], ["serve"]]
    const runs = await Promise.all(helps.map(help))
    for (const [i, run] of runs.entries()) {
      expect(run.code, [...helps[i]!, "--help"].join(" ")).toBe(0)
      expect(run.stdout, [...helps[i]!, "--help"].join(" ")).toContain("USAGE")
    }
  })

  it("lists every top-level command, and each one alone runs as it does among all (main.ts loads only the named one)", async () => {
    const root = await help([])
    const listed = root.stdout.split("SUBCOMMANDS")[1]!.trim().split("\n").map((line) => line.trim().split(/\s+/)[0]!)
    expect(listed).toEqual([
      "serve",
      "db",
      "org",
      "member",
      "auth",
      "gateway",
      "ingest",
      "sync",
      "usage",
      "mcp",
      "versions",
      "query",
      "info",
      "vuln",
      "exploits"
    ])
    const helps = await Promise.all(listed.map((name) => help([name])))
    for (const [i, shown] of helps.entries()) {
      expect(shown.code, listed[i]).toBe(0)
      expect(shown.stdout, listed[i]).toContain(`vdb ${listed[i]}`)
    }
    // A global flag first loads every command, and the subcommand after it still parses.
    const [flagged, alone] = await Promise.all([
      runVdb(["--log-level", "error", "mcp", "tools", "--json"], { VDB_DATA_DIR: tempDataDir() }),
      runVdb(["mcp", "tools", "--json"], { VDB_DATA_DIR: tempDataDir() })
    ])
    expect(flagged.code).toBe(0)
    expect(flagged.stdout).toBe(alone.stdout)
    expect(JSON.parse(alone.stdout)).toHaveLength(31)
  })
})
