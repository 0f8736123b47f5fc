import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "../gateway/upstreams/FakeUpstream.ts"
import { type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"

/**
 * The embedded database has one process, so its bus is in-process: a change
 * made through the admin socket reaches the gateway's caches in the same
 * process before the CLI returns (the TTL is the default 30 s).
 */
describe("changes through the admin socket reach the gateway at once (PGlite)", () => {
  let upstream: FakeUpstream
  let server: RunningServer
  let env: Record<string, string>

  beforeAll(async () => {
    upstream = await startFakeUpstream()
    env = { VDB_DATA_DIR: tempDataDir(), VDB_PROVIDER_OPENAI_BASE_URL: `${upstream.url}/v1`, VDB_LOG_LEVEL: "Warn" }
    server = await startServer(env, ["gateway"])
  }, 120_000)

  afterAll(async () => {
    await server?.stop()
    await upstream?.close()
  })

  const vdb = async (args: ReadonlyArray<string>, input?: string) => {
    const run = await runVdb(args, env, input)
    expect(run.code, run.stderr).toBe(0)
    return run.stdout
  }

  const chat = (org: string, serviceKey: string) =>
    fetch(`http://127.0.0.1:${server.ports.gateway}/openai/${org}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${serviceKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4.1", messages: [{ role: "user", content: "hi" }] })
    }).then(async (r) => {
      await r.arrayBuffer()
      return r.status
    })

  it("a deactivation and a new provider key apply to the next request", async () => {
    const org = JSON.parse(await vdb(["org", "create", "--name", "embedded", "--json"]))
    const key = JSON.parse(await vdb(["gateway", "service-key", "create", "--org", org.uuid, "--json"])).key as string
    await vdb(["gateway", "provider-key", "set", "--org", org.uuid, "--provider", "openai"], "sk-one")
    expect(await chat(org.uuid, key)).toBe(200)

    await vdb(["gateway", "provider-key", "set", "--org", org.uuid, "--provider", "openai"], "sk-two")
    expect(await chat(org.uuid, key)).toBe(200)
    expect(upstream.received.at(-1)?.headers.authorization).toBe("Bearer sk-two")

    await vdb(["org", "deactivate", org.uuid])
    expect(await chat(org.uuid, key)).toBe(401)
  }, 60_000)
})
