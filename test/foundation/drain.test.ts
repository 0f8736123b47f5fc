import { spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { baseEnv, freePort, runVdb, startServer, tempDataDir, VDB } from "../support/processes.ts"

/** A provider that answers after a pause (2.5 s), so a request is in flight when SIGTERM arrives. */
const slowUpstream = () =>
  new Promise<Server>((resolve) => {
    const server = createServer((req, res) => {
      req.resume()
      req.on("end", () =>
        setTimeout(() => {
          res.writeHead(200, { "content-type": "application/json" })
          res.end(JSON.stringify({ id: "chatcmpl-slow", object: "chat.completion", choices: [] }))
        }, 2500))
    })
    server.listen(0, "127.0.0.1", () => resolve(server))
  })

const logLines = (stderr: string) =>
  stderr.split("\n").filter((l) => l.startsWith("{")).map((l) =>
    JSON.parse(l) as { message: string; annotations: Record<string, unknown> }
  )

describe("bin/vdb serve shutdown", () => {
  let upstream: Server | undefined
  afterAll(() => upstream?.close())

  it("drains an in-flight gateway request on SIGTERM, then exits 0", async () => {
    upstream = await slowUpstream()
    const env = {
      VDB_DATA_DIR: tempDataDir(),
      VDB_PROVIDER_OPENAI_BASE_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`
    }
    // The set-up goes through the running server's admin socket: each command run in-process would open
    // the embedded database itself (seconds each).
    const server = await startServer(env, ["gateway"])
    const org = JSON.parse((await runVdb(["org", "create", "--name", "drain", "--json"], env)).stdout).uuid
    const key = JSON.parse((await runVdb(["gateway", "service-key", "create", "--org", org, "--json"], env)).stdout).key
    expect(
      (await runVdb(["gateway", "provider-key", "set", "--org", org, "--provider", "openai"], env, "sk-upstream\n"))
        .code
    )
      .toBe(0)
    const inFlight = fetch(`http://127.0.0.1:${server.ports.gateway}/openai/${org}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] })
    })
    await new Promise((r) => setTimeout(r, 400))
    const exited = server.stop("SIGTERM")
    const response = await inFlight
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ id: "chatcmpl-slow" })
    expect(await exited).toBe(0)
    expect(server.output().stderr).not.toContain("sk-upstream")
    expect(server.output().stderr).not.toContain(key)
    // Before: the stop logged nothing, and a stop waiting on a slow request looked like a hang.
    const logs = logLines(server.output().stderr)
    expect(logs.find((l) => l.message.startsWith("vdb is stopping"))?.annotations).toEqual({
      requestsInFlight: { gateway: 1 }
    })
    const stopped = logs.find((l) => l.message.startsWith("vdb stopped after"))
    expect(stopped?.message).toMatch(
      /^vdb stopped after \d+\.\d s; it waited \d+\.\d s for requests in flight on gateway/
    )
    const waited = stopped?.annotations.waitedMs as Record<string, number>
    expect(Object.keys(waited).sort()).toEqual([
      "admin requests and ingest runs",
      "feed sync runs",
      "requests in flight on gateway",
      "the database to close"
    ])
    expect(waited["requests in flight on gateway"]).toBeGreaterThan(1000)
  })

  it("a quick stop logs that it is stopping, and no summary", async () => {
    const server = await startServer({ VDB_DATA_DIR: tempDataDir() }, ["api"])
    expect(await server.stop("SIGTERM")).toBe(0)
    const logs = logLines(server.output().stderr)
    expect(logs.filter((l) => l.message.startsWith("vdb is stopping")).map((l) => l.annotations)).toEqual([{
      requestsInFlight: { api: 0 }
    }])
    const stopped = logs.find((l) => l.message.startsWith("vdb stopped after"))
    // Over a second only: the embedded database can take that long to close on a busy machine.
    if (stopped !== undefined) expect(stopped.annotations.stopMs).toBeGreaterThan(1000)
  })

  it("exits on SIGTERM during start-up, with the embedded database still opening its connections", async () => {
    // A SIGTERM while start-up's queries were in flight used to leave pglite-socket waiting forever
    // for a connection cut mid-query: the server never exited. The admin socket appears first, so
    // signals sent at a few points after it land in that stretch, on a slow machine as on a fast one.
    for (const after of [400, 900, 1600]) {
      const dataDir = tempDataDir()
      const port = await freePort()
      const child = spawn(VDB, ["serve", "api"], {
        env: { ...baseEnv(), VDB_DATA_DIR: dataDir, VDB_API_PORT: String(port) },
        stdio: ["ignore", "ignore", "pipe"]
      })
      let stderr = ""
      child.stderr.on("data", (d) => (stderr += d))
      const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)))
      while (!existsSync(join(dataDir, "admin.sock")) && child.exitCode === null) {
        await new Promise((r) => setTimeout(r, 5))
      }
      await new Promise((r) => setTimeout(r, after))
      child.kill("SIGTERM")
      // Not a timing check: a server that never exits fails here instead of hanging the suite.
      const code = await Promise.race([
        exited,
        new Promise<"still running">((r) => setTimeout(() => r("still running"), 30_000))
      ])
      if (code === "still running") child.kill("SIGKILL")
      expect(code, `SIGTERM ${after} ms after the admin socket appeared: ${stderr}`).toBe(0)
    }
  }, 150_000)
})
