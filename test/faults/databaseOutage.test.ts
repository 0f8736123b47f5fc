import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MCP_HEADERS } from "../mcp/mcpServer.ts"
import { type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"
import { startThrowawayCluster, type ThrowawayCluster } from "../support/throwawayCluster.ts"

/**
 * Issue 35's fault suite: the database stops for 10 s under load, then starts again. Meanwhile
 * every service answers (no hang, no crash): from its caches where it can, otherwise 503 in its
 * own dialect with Retry-After; within 5 s of the database's return every service answers as
 * before; an admin write is either acknowledged and stored, or refused; usage and inference-log
 * rows are stored or counted as dropped, never silently lost, and for an outage this short they
 * are all stored (held in memory and retried).
 */

const COMPLETION = JSON.stringify({
  id: "chatcmpl-outage",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "gpt-4o-mini",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 }
})

let cluster: ThrowawayCluster
let upstream: Server
let server: RunningServer
let env: Record<string, string>
let warm: { uuid: string; apiKey: string; serviceKey: string }
let cold: { uuid: string; apiKey: string; serviceKey: string }

const vdb = async (args: ReadonlyArray<string>, input?: string) => {
  const run = await runVdb(args, env, input)
  if (run.code !== 0) throw new Error(`vdb ${args.join(" ")} failed (${run.code}): ${run.stderr}`)
  return run.stdout
}

const organization = async (name: string) => {
  const org = JSON.parse(await vdb(["org", "create", "--name", name, "--json"])) as { uuid: string; apiKey: string }
  // Independent admin writes, at once: each CLI start costs seconds on a busy machine.
  const [, created] = await Promise.all([
    vdb(["org", "limits", org.uuid, "--per-minute", "0", "--per-week", "0"]),
    vdb(["gateway", "service-key", "create", "--org", org.uuid, "--json"]),
    vdb(["gateway", "provider-key", "set", "--org", org.uuid, "--provider", "openai"], "sk-outage\n"),
    vdb(["gateway", "inference-log", "enable", "--org", org.uuid])
  ])
  return { uuid: org.uuid, apiKey: org.apiKey, serviceKey: (JSON.parse(created) as { key: string }).key }
}

interface Answer {
  readonly service: string
  readonly status: number
  readonly retryAfter: string | null
  readonly body: string
}

const answer = async (service: string, url: string, init: RequestInit): Promise<Answer> => {
  // No hang: every request is answered well inside 5 s, database or not.
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(5_000) })
  const answered = {
    service,
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body: await response.text()
  }
  everyAnswer.push(answered)
  return answered
}

/** Every answer the test received, for the accounting at the end. */
const everyAnswer: Array<Answer> = []
let unknownId = 0
/** One request per service that cannot be answered from a cache: each needs the database. */
const needsDatabase = (who: typeof warm): Array<Promise<Answer>> => [
  answer("api", `http://127.0.0.1:${server.ports.api}/v1/vuln/CVE-2099-${String(10_000 + unknownId++)}`, {
    headers: { authorization: who.apiKey }
  }),
  answer("gateway", `http://127.0.0.1:${server.ports.gateway}/openai/${who.uuid}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${who.serviceKey}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] })
  }),
  answer("mcp", `http://127.0.0.1:${server.ports.mcp}/mcp`, {
    method: "POST",
    headers: { authorization: who.apiKey, ...MCP_HEADERS },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "outage", version: "1" } }
    })
  }),
  answer("site", `http://127.0.0.1:${server.ports.site}/api/site/v1/cli/device/authorize`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ client_name: "outage test" })
  })
]

/** The 503 each service's clients understand. */
const inDialect = (a: Answer) => {
  expect(String(a.retryAfter), `${a.service} 503 without Retry-After: ${a.body}`).toMatch(/^\d+$/)
  const body = JSON.parse(a.body) as Record<string, unknown>
  switch (a.service) {
    case "api":
      expect(body).toMatchObject({ success: false, error: expect.stringMatching(/unavailable/) })
      break
    case "gateway":
      expect(body).toMatchObject({ error: { type: expect.any(String), message: expect.stringMatching(/unavailable/) } })
      break
    case "mcp":
      expect(body).toMatchObject({ error: { message: expect.stringMatching(/unavailable/) } })
      break
    case "site":
      expect(body).toMatchObject({ error: "temporarily_unavailable", error_description: expect.any(String) })
      break
  }
  expect(a.body).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|postgres/i)
}

/** One value from the cluster, with psql (the database's own client). */
const sql = (on: ThrowawayCluster, query: string) =>
  execFileSync("psql", [on.url, "-AtX", "-c", query], { encoding: "utf8", timeout: 10_000 }).trim()

const dropped = (stderr: string, log: string) =>
  stderr.split("\n").filter((line) => line.includes(log)).reduce((sum, line) => {
    const match = /"dropped":(\d+)/.exec(line)
    return sum + (match === null ? 0 : Number(match[1]))
  }, 0)

beforeAll(async () => {
  cluster = await startThrowawayCluster()
  upstream = createServer((request, response) => {
    request.resume()
    request.on("end", () => response.writeHead(200, { "content-type": "application/json" }).end(COMPLETION))
  })
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve))
  server = await startServer({
    VDB_DATA_DIR: tempDataDir(),
    DATABASE_URL: cluster.url,
    VDB_MASTER_KEY: randomBytes(32).toString("base64"),
    VDB_PROVIDER_OPENAI_BASE_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`
  })
  env = server.env
  ;[warm, cold] = await Promise.all([organization("warm"), organization("cold")])
}, 180_000)

afterAll(async () => {
  await server?.stop("SIGKILL")
  await new Promise((resolve) => upstream?.close(resolve))
  cluster?.destroy()
}, 60_000)

describe("the database stopped for 10 s under load, then started", () => {
  it(
    "answers 503 in each dialect meanwhile, never hangs or crashes, recovers within 5 s, loses nothing silently",
    async () => {
      // Warm: the first organization's keys are in every process cache.
      for (const a of await Promise.all(needsDatabase(warm))) {
        expect([200, 404], `${a.service}: ${a.body}`).toContain(
          a.status
        )
      }

      cluster.stop()
      const outageEnds = Date.now() + 10_000
      const during: Array<Answer> = []
      while (Date.now() < outageEnds) {
        // Load: the warm organization (cached keys) and the cold one (keys never read: the database is needed).
        during.push(...await Promise.all([...needsDatabase(warm), ...needsDatabase(cold)]))
        expect(server.child.exitCode, "the server exited during the outage").toBeNull()
      }
      // An admin write during the outage is refused, not acknowledged.
      const write = await runVdb(["org", "create", "--name", "during-outage", "--json"], env)
      expect(write.code).not.toBe(0)
      expect(write.stderr).toMatch(/unavailable|database/i)

      for (const a of during) {
        expect([200, 404, 503], `${a.service} answered ${a.status}: ${a.body}`).toContain(a.status)
        if (a.status === 503) inDialect(a)
      }
      for (const service of ["api", "gateway", "mcp", "site"]) {
        expect(during.some((a) => a.service === service && a.status === 503), `${service} never needed the database`)
          .toBe(true)
      }

      cluster.start()
      const back = Date.now()
      let recovered = false
      while (!recovered && Date.now() - back < 5_000) {
        const answers = await Promise.all(needsDatabase(cold))
        recovered = answers.every((a) => a.status === 200 || a.status === 404)
        if (!recovered) await new Promise((resolve) => setTimeout(resolve, 100))
      }
      expect(recovered, "a service still failed 5 s after the database came back").toBe(true)

      // Nothing acknowledged is lost silently: the organization written before the outage is there,
      // and every API request and every relayed completion is a stored row or counted as dropped.
      expect(await vdb(["org", "list", "--json"])).toContain(warm.uuid)
      const apiRequests = everyAnswer.filter((a) => a.service === "api").length
      const relayed = everyAnswer.filter((a) => a.service === "gateway" && a.status === 200).length
      const orgs = `'${warm.uuid}', '${cold.uuid}'`
      const account = () => ({
        usage: Number(sql(cluster, `SELECT count(*) FROM usage_log WHERE route LIKE '/v1/vuln/%'`)),
        usageDropped: Number(sql(cluster, "SELECT coalesce(sum(dropped), 0) FROM usage_dropped")),
        inference: Number(sql(cluster, `SELECT count(*) FROM gateway_inference_log WHERE org_uuid IN (${orgs})`))
      })
      // The batch writers flush on their own: wait (bounded) until the rows or their counts are in.
      const settleBy = Date.now() + 15_000
      let accounted = account()
      while (
        Date.now() < settleBy &&
        (accounted.usage + accounted.usageDropped < apiRequests ||
          accounted.inference + dropped(server.output().stderr, "inference log") < relayed)
      ) {
        await new Promise((resolve) => setTimeout(resolve, 250))
        accounted = account()
      }
      expect(accounted.usage).toBeLessThanOrEqual(apiRequests)
      expect(accounted.usage + accounted.usageDropped, JSON.stringify(accounted)).toBeGreaterThanOrEqual(apiRequests)
      const inferenceDropped = dropped(server.output().stderr, "inference log")
      const settled = JSON.stringify({ ...accounted, inferenceDropped, apiRequests, relayed })
      expect(accounted.inference + inferenceDropped, settled).toBeGreaterThanOrEqual(relayed)
      // A 10 s outage is within what the writers hold for retry (60 s, 10,000 rows each): nothing
      // was dropped, every row written during it is stored now. (The bounds: test/db/batchedWriter.test.ts.)
      expect(accounted.usageDropped, settled).toBe(0)
      expect(inferenceDropped, settled).toBe(0)
      expect(accounted.usage, settled).toBe(apiRequests)
      expect(accounted.inference, settled).toBeGreaterThanOrEqual(relayed)
    },
    120_000
  )
})
