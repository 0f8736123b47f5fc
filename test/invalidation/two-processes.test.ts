import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeUpstream, startFakeUpstream } from "../gateway/upstreams/FakeUpstream.ts"
import { throwawayDatabase } from "../support/database.ts"
import { type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"

/**
 * Two `bin/vdb serve` processes on one PostgreSQL. Every change goes through
 * process A (the CLI on A's admin socket); the very next request on process B
 * must see it. B's key cache TTL is the default 30 s, so only the invalidation
 * bus can make that happen.
 */
describe("changes on one server process take effect on another at once (PostgreSQL)", () => {
  const scope = Effect.runSync(Scope.make())
  let upstream: FakeUpstream
  let a: RunningServer
  let b: RunningServer
  let envA: Record<string, string>

  beforeAll(async () => {
    upstream = await startFakeUpstream()
    const database = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
    const shared = {
      DATABASE_URL: database.url,
      VDB_MASTER_KEY: randomBytes(32).toString("base64"),
      VDB_PROVIDER_OPENAI_BASE_URL: `${upstream.url}/v1`,
      VDB_LOG_LEVEL: "Warn"
    }
    envA = { ...shared, VDB_DATA_DIR: tempDataDir() }
    // A first: it runs the migrations B then finds done.
    a = await startServer(envA, ["api", "gateway"])
    b = await startServer({ ...shared, VDB_DATA_DIR: tempDataDir() }, ["api", "gateway"])
  }, 120_000)

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()])
    await upstream?.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  /** `bin/vdb ...` against process A; fails the test on a non-zero exit. */
  const onA = async (args: ReadonlyArray<string>, input?: string) => {
    const run = await runVdb(args, envA, input)
    expect(run.code, run.stderr).toBe(0)
    return run.stdout
  }

  const chat = (org: string, serviceKey: string) =>
    fetch(`http://127.0.0.1:${b.ports.gateway}/openai/${org}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${serviceKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4.1", messages: [{ role: "user", content: "hi" }] })
    }).then(async (r) => {
      await r.arrayBuffer()
      return r.status
    })

  /** Authentication comes before the lookup: 404 (no such record) means admitted. */
  const apiStatus = (apiKey: string) =>
    fetch(`http://127.0.0.1:${b.ports.api}/v1/info/CVE-2021-44228`, { headers: { authorization: apiKey } }).then(
      async (r) => {
        await r.arrayBuffer()
        return r.status
      }
    )

  const lastUpstreamKey = () => upstream.received.at(-1)?.headers.authorization

  /** An organization with a service key and an OpenAI key, everything already read (and cached) by B. */
  const warmOrganization = async (name: string, gateway = true) => {
    const org = JSON.parse(
      await onA(["org", "create", "--name", name, "--per-minute", "0", "--per-week", "0", "--json"])
    )
    expect(await apiStatus(org.apiKey)).toBe(404)
    if (!gateway) return { uuid: org.uuid as string, apiKey: org.apiKey as string, serviceKey: "" }
    const serviceKey = JSON.parse(await onA(["gateway", "service-key", "create", "--org", org.uuid, "--json"]))
      .key as string
    await onA(["gateway", "provider-key", "set", "--org", org.uuid, "--provider", "openai"], "sk-one")
    expect(await chat(org.uuid, serviceKey)).toBe(200)
    expect(lastUpstreamKey()).toBe("Bearer sk-one")
    return { uuid: org.uuid as string, apiKey: org.apiKey as string, serviceKey }
  }

  it("a deactivation refuses B's very next gateway and API request; a reactivation admits the next", async () => {
    const org = await warmOrganization("deactivated")
    await onA(["org", "deactivate", org.uuid])
    expect(await chat(org.uuid, org.serviceKey)).toBe(401)
    expect(await apiStatus(org.apiKey)).toBe(403)
    await onA(["org", "activate", org.uuid])
    expect(await chat(org.uuid, org.serviceKey)).toBe(200)
    expect(await apiStatus(org.apiKey)).toBe(404)
  }, 60_000)

  it("a rotated organization secret: B's API refuses the old API key and takes the new one", async () => {
    const org = await warmOrganization("rotated-secret", false)
    const rotated = JSON.parse(await onA(["org", "rotate-secret", org.uuid, "--json"]))
    expect(await apiStatus(org.apiKey)).toBe(401)
    expect(await apiStatus(rotated.apiKey)).toBe(404)
  }, 60_000)

  it("a rotated service key: B's gateway refuses the old key and takes the new one", async () => {
    const org = await warmOrganization("rotated-service-key")
    const rotated = JSON.parse(await onA(["gateway", "service-key", "rotate", "--org", org.uuid, "--json"]))
      .key as string
    expect(await chat(org.uuid, org.serviceKey)).toBe(401)
    expect(await chat(org.uuid, rotated)).toBe(200)
  }, 60_000)

  it("a changed or deleted provider key: B's gateway sends the new key next, or none", async () => {
    const org = await warmOrganization("changed-provider-key")
    await onA(["gateway", "provider-key", "set", "--org", org.uuid, "--provider", "openai"], "sk-two")
    expect(await chat(org.uuid, org.serviceKey)).toBe(200)
    expect(lastUpstreamKey()).toBe("Bearer sk-two")
    await onA(["gateway", "provider-key", "delete", "--org", org.uuid, "--provider", "openai"])
    const before = upstream.received.length
    expect(await chat(org.uuid, org.serviceKey)).toBe(403)
    expect(upstream.received.length).toBe(before)
  }, 60_000)
})
