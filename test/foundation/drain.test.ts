import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, describe, expect, it } from "vitest"
import { runVdb, startServer, tempDataDir } from "../support/processes.ts"

/** A provider that answers after a pause, so a request is in flight when SIGTERM arrives. */
const slowUpstream = () =>
  new Promise<Server>((resolve) => {
    const server = createServer((req, res) => {
      req.resume()
      req.on("end", () =>
        setTimeout(() => {
          res.writeHead(200, { "content-type": "application/json" })
          res.end(JSON.stringify({ id: "chatcmpl-slow", object: "chat.completion", choices: [] }))
        }, 1500))
    })
    server.listen(0, "127.0.0.1", () => resolve(server))
  })

describe("bin/vdb serve shutdown", () => {
  let upstream: Server | undefined
  afterAll(() => upstream?.close())

  it("drains an in-flight gateway request on SIGTERM, then exits 0", async () => {
    upstream = await slowUpstream()
    const env = {
      VDB_DATA_DIR: tempDataDir(),
      VDB_PROVIDER_OPENAI_BASE_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`
    }
    const org = JSON.parse((await runVdb(["org", "create", "--name", "drain", "--json"], env)).stdout).uuid
    const key = JSON.parse((await runVdb(["gateway", "service-key", "create", "--org", org, "--json"], env)).stdout).key
    expect((await runVdb(["gateway", "provider-key", "set", "--org", org, "--provider", "openai"], env, "sk-upstream\n")).code)
      .toBe(0)
    const server = await startServer(env, ["gateway"])
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
  })
})
