import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { existsSync } from "node:fs"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { integrityOf } from "../../src/nonces/SealedBlocks.ts"
import { type FakeKiro, startFakeKiro } from "../gateway/kiro/FakeKiro.ts"
import { throwawayDatabase } from "../support/database.ts"
import { type FeedMirror, feedMirror, mirrorConfig } from "../support/feedMirror.ts"
import { NGINX, type RunningNginx, startNginx } from "../support/nginx.ts"
import { freePort, type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"

/**
 * Two separate `bin/vdb serve` processes (not `--workers`: one of them is killed, which under
 * `--workers` stops the whole) on one PostgreSQL, behind a real nginx balancing over both, the
 * feed schedule on against the loopback mirror, Kiro's sign-in service and API on loopback. Each
 * process has its own metrics port: its series say which process did what.
 */
const PROXY = "127.0.0.3"
/** Ticks of a few catalogue sources; the others keep their default (hourly, daily) intervals. */
const TICK_MS = 3000
const TICKED = ["cisa-kev", "epss", "exploit-db"]
const COMPLETION = JSON.stringify({
  id: "chatcmpl-proxy",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "gpt-4o-mini",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 }
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const waitFor = async (what: string, ok: () => boolean, ms: number) => {
  const deadline = Date.now() + ms
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}

describe.skipIf(!existsSync(NGINX))("two vdb processes behind nginx, one PostgreSQL", () => {
  const scope = Effect.runSync(Scope.make())
  let mirror: FeedMirror
  let kiro: FakeKiro
  let upstream: Server
  let a: RunningServer
  let b: RunningServer
  const metricsPorts = new Map<RunningServer, number>()
  let nginx: RunningNginx
  let org: { uuid: string; apiKey: string; serviceKey: string }
  /** When both processes were serving: the sync schedule is counted from here. */
  let started: number

  beforeAll(async () => {
    mirror = await Effect.runPromise(Scope.provide(feedMirror, scope))
    const database = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
    kiro = await startFakeKiro()
    upstream = createServer((request, response) => {
      request.resume()
      request.on("end", () => response.writeHead(200, { "content-type": "application/json" }).end(COMPLETION))
    })
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve))
    const shared = {
      ...mirrorConfig(mirror),
      ...Object.fromEntries(TICKED.map((s) => [`VDB_SYNC_INTERVAL_${s.toUpperCase().replaceAll("-", "_")}`, "3s"])),
      VDB_SYNC: "on",
      VDB_SYNC_TAKEOVER: "6 seconds",
      DATABASE_URL: database.url,
      VDB_MASTER_KEY: randomBytes(32).toString("base64"),
      VDB_LOG_LEVEL: "Info",
      VDB_TRUSTED_PROXIES: PROXY,
      VDB_PROVIDER_OPENAI_BASE_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`,
      VDB_PROVIDER_KIRO_BASE_URL: kiro.url,
      VDB_PROVIDER_KIRO_AUTH_URL: `${kiro.url}/refreshToken`,
      VDB_METRICS: "on"
    }
    const start = async () => {
      const port = await freePort()
      const server = await startServer(
        { ...shared, VDB_DATA_DIR: tempDataDir(), VDB_METRICS_PORT: String(port) },
        ["api", "gateway"]
      )
      metricsPorts.set(server, port)
      return server
    }
    // One after the other: the first migrates the database.
    a = await start()
    b = await start()
    const vdb = async (args: ReadonlyArray<string>, input?: string) => {
      const run = await runVdb(args, a.env, input)
      if (run.code !== 0) throw new Error(`vdb ${args.join(" ")} failed (${run.code}): ${run.stderr}`)
      return run.stdout
    }
    const made = JSON.parse(
      await vdb(["org", "create", "--name", "proxied", "--per-minute", "0", "--per-week", "0", "--json"])
    ) as { uuid: string; apiKey: string }
    const [created] = await Promise.all([
      vdb(["gateway", "service-key", "create", "--org", made.uuid, "--json"]),
      vdb(["gateway", "provider-key", "set", "--org", made.uuid, "--provider", "openai"], "sk-proxy\n"),
      vdb(
        ["gateway", "provider-key", "set", "--org", made.uuid, "--provider", "kiro"],
        JSON.stringify({ refreshToken: "proxy-refresh-token", authMethod: "social" })
      )
    ])
    org = { ...made, serviceKey: (JSON.parse(created) as { key: string }).key }
    started = Date.now()
    nginx = await startNginx({ api: [a.ports.api, b.ports.api], gateway: [a.ports.gateway, b.ports.gateway] }, PROXY)
  }, 180_000)

  afterAll(async () => {
    await nginx?.stop()
    await Promise.all([a?.stop("SIGKILL"), b?.stop("SIGKILL")])
    await kiro?.close()
    await new Promise((resolve) => upstream?.close(resolve))
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }, 60_000)

  /** One series' value on a process's own metrics port (0 when absent). */
  const metric = async (server: RunningServer, series: string) => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPorts.get(server)}/metrics`)).text()
    const line = text.split("\n").find((l) => l.startsWith(`${series} `))
    return line === undefined ? 0 : Number(line.slice(series.length + 1))
  }

  const nonces = async (port: number, count: number) => {
    const response = await fetch(`http://127.0.0.1:${port}/openai/${org.uuid}/v1/nonces?count=${count}`, {
      headers: { authorization: `Bearer ${org.serviceKey}` }
    })
    expect(response.status).toBe(200)
    return ((await response.json()) as { nonces: Array<string> }).nonces
  }

  /** A chat completion carrying one sealed block per nonce; answers the firewall's nonce header. */
  const sealed = async (port: number, issued: ReadonlyArray<string>) => {
    const content = issued.map((nonce, i) =>
      `<system nonce="${nonce}" integrity="${integrityOf(`rule ${i}`)}">rule ${i}</system>`
    )
      .join("\n")
    const response = await fetch(`http://127.0.0.1:${port}/openai/${org.uuid}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${org.serviceKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content }] })
    })
    expect(response.status, await response.text()).toBe(200)
    return response.headers.get("x-gateway-firewall-nonce")
  }
  const allVerified = (n: number) => `mode=observe;verified=${n};unknown=0;tampered=0;stripped=0`

  it("nonces issued by one process are verified by the other, directly and through nginx", async () => {
    const [fromA, fromB] = await Promise.all([nonces(a.ports.gateway, 3), nonces(b.ports.gateway, 3)])
    expect(await sealed(b.ports.gateway, fromA)).toBe(allVerified(3))
    expect(await sealed(a.ports.gateway, fromB)).toBe(allVerified(3))
    // Through nginx: issued one at a time (round robin over both), each request verifying all of them.
    const proxied: Array<string> = []
    for (let i = 0; i < 4; i++) proxied.push(...await nonces(nginx.ports.gateway!, 1))
    for (let i = 0; i < 4; i++) expect(await sealed(nginx.ports.gateway!, proxied)).toBe(allVerified(4))
    // Both processes issued and verified some (nginx spread the calls): from their own counters.
    for (const server of [a, b]) {
      expect(await metric(server, `vdb_gateway_nonces_total{outcome="issued"}`)).toBeGreaterThan(3)
      expect(await metric(server, `vdb_gateway_nonces_total{outcome="valid"}`)).toBeGreaterThan(3)
      expect(await metric(server, `vdb_gateway_nonces_total{outcome="unknown"}`)).toBe(0)
    }
  })

  it("both processes needing a Kiro token at once make one refresh between them", async () => {
    const open = kiro.hold()
    const generate = () =>
      fetch(`http://127.0.0.1:${nginx.ports.gateway}/kiro/${org.uuid}/v1/generateAssistantResponse`, {
        method: "POST",
        headers: { authorization: `Bearer ${org.serviceKey}`, "content-type": "application/json" },
        body: JSON.stringify({
          conversationState: {
            chatTriggerType: "MANUAL",
            conversationId: "c-1",
            currentMessage: { userInputMessage: { content: "hi", modelId: "claude-sonnet-4.5", origin: "AI_EDITOR" } }
          }
        })
      }).then(async (r) => ({ status: r.status, body: Buffer.from(await r.arrayBuffer()) }))
    // Six at once, round robin over both processes; the sign-in service holds the first refresh
    // while the other process's requests wait for the lease on the sign-in.
    const replies = Promise.all(Array.from({ length: 6 }, generate))
    await waitFor("a refresh", () => kiro.refreshes.length > 0, 15_000)
    await sleep(1000)
    open()
    for (const reply of await replies) {
      expect(reply.status, reply.body.toString()).toBe(200)
      expect(reply.body.equals(kiro.stream)).toBe(true)
    }
    expect(kiro.refreshes.length).toBe(1)
    const calls = `vdb_gateway_upstream_duration_seconds_count{provider="kiro",surface="kiro"}`
    const refreshes = `vdb_gateway_kiro_refreshes_total{outcome="ok"}`
    const [callsA, callsB, refreshedA, refreshedB] = await Promise.all([
      metric(a, calls),
      metric(b, calls),
      metric(a, refreshes),
      metric(b, refreshes)
    ])
    // Both processes relayed (so both needed the token), one of them refreshed.
    expect(callsA + callsB).toBe(6)
    expect(Math.min(callsA, callsB)).toBeGreaterThan(0)
    expect(refreshedA + refreshedB).toBe(1)
  })

  /** Runs of `source` each process logged (one line per run: changed, unchanged or busy). */
  const runs = (server: RunningServer, source: string, since = 0) =>
    server.output().stderr.split("\n").filter((l) => l.includes(`"feed ${source}: `)).filter((l) =>
      Date.parse(JSON.parse(l).timestamp) >= since
    ).length
  const fetchesOf = (source: string, since: number) =>
    mirror.requests.filter((r) => r.path.startsWith(`/${source}/`) && r.at >= since).length

  it("each source runs once per tick across both processes", async () => {
    // Counted from the first tick after both processes joined (shards may move while they do).
    const from = started + TICK_MS
    await sleep(Math.max(0, from + 5 * TICK_MS - Date.now()))
    const until = Date.now()
    const ticks = (until - from) / TICK_MS
    for (const source of TICKED) {
      const ran = runs(a, source, from) + runs(b, source, from)
      // One run per tick, give or take the window's edges; each process running it would be twice as many.
      expect(ran, source).toBeGreaterThanOrEqual(Math.floor(ticks) - 1)
      expect(ran, source).toBeLessThanOrEqual(Math.ceil(ticks) + 1)
      // Each run fetched its file once (a fetch and its run's log line may fall either side of an edge).
      expect(Math.abs(fetchesOf(source, from) - ran), source).toBeLessThanOrEqual(1)
      expect(a.output().stderr + b.output().stderr).not.toContain(`"feed ${source}: busy"`)
    }
  }, 60_000)

  it(
    "one process killed with SIGKILL under load: the other serves through nginx and takes its feed runs over",
    async () => {
      interface Outcome {
        /** When it was sent and answered. */
        readonly at: number
        readonly end: number
        readonly status: number | string
      }
      const outcomes: Array<Outcome> = []
      let loading = true
      const one = async (i: number) => {
        const at = Date.now()
        const request = i % 2 === 0
          ? fetch(`http://127.0.0.1:${nginx.ports.api}/v1/info/CVE-2021-44228`, {
            headers: { authorization: org.apiKey },
            signal: AbortSignal.timeout(10_000)
          })
          : fetch(`http://127.0.0.1:${nginx.ports.gateway}/openai/${org.uuid}/v1/chat/completions`, {
            method: "POST",
            headers: { authorization: `Bearer ${org.serviceKey}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }),
            signal: AbortSignal.timeout(10_000)
          })
        const status = await request.then(async (r) => {
          await r.arrayBuffer()
          return r.status
        }, (e: Error) => e.name)
        outcomes.push({ at, end: Date.now(), status })
      }
      const load = Promise.all(Array.from({ length: 6 }, async (_, lane) => {
        for (let i = lane; loading; i++) await one(i)
      }))
      const ok = (o: Outcome) => o.status === 200 || o.status === 404
      await sleep(1000)
      // The process that ran KEV last holds its schedule: that one is killed.
      const last = (server: RunningServer) =>
        Math.max(
          0,
          ...server.output().stderr.split("\n").filter((l) => l.includes(`"feed cisa-kev: `)).map((l) =>
            Date.parse(JSON.parse(l).timestamp)
          )
        )
      const [victim, survivor] = last(a) >= last(b) ? [a, b] : [b, a]
      const before = runs(survivor, "cisa-kev")
      const killedAt = Date.now()
      await victim.stop("SIGKILL")
      await waitFor("the survivor to run KEV twice", () => runs(survivor, "cisa-kev") >= before + 2, 45_000)
      const takeover = Date.now() - killedAt
      await sleep(1000)
      loading = false
      await load

      const failed = outcomes.filter((o) => !ok(o))
      const failedAfter = (ms: number) => failed.filter((o) => o.at >= killedAt + ms)
      const detail = JSON.stringify({ takeover, failed: failed.map((o) => [o.at - killedAt, o.status]) })
      expect(outcomes.filter((o) => o.end < killedAt).every(ok), detail).toBe(true)
      // The brief window: only requests already sent to the killed process fail (nginx answers 502
      // for a POST it cannot replay; it retries an idempotent GET on the other); nothing after 2 s.
      expect(failed.every((o) => o.status === 502), detail).toBe(true)
      expect(failed.length, detail).toBeLessThanOrEqual(6)
      expect(failedAfter(2000), detail).toEqual([])
      expect(outcomes.filter((o) => o.at >= killedAt + 2000).length, detail).toBeGreaterThan(10)
      expect(survivor.child.exitCode, detail).toBeNull()
      // The killed process's shard lease (6 s) runs out, then the survivor runs KEV on its ticks.
      expect(takeover, detail).toBeLessThan(25_000)
      console.log(`SIGKILL behind nginx: ${outcomes.length} requests, ${failed.length} failed, takeover ${takeover} ms`)
    },
    90_000
  )
})
