import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, runVdb, startServer, tempDataDir } from "../support/processes.ts"

/**
 * Issue 35, "Traces and logs": `bin/vdb serve` with `OTEL_EXPORTER_OTLP_ENDPOINT` on a loopback
 * OTLP/HTTP receiver (JSON), a stub provider behind the gateway, one API and one gateway request
 * each continuing a client's `traceparent`. The spans are read once the server has stopped (the
 * exporter flushes on shutdown).
 */
interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
}

const listen = async (server: Server): Promise<number> => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return (server.address() as AddressInfo).port
}
const bodyOf = (request: import("node:http").IncomingMessage) =>
  new Promise<string>((resolve) => {
    let text = ""
    request.setEncoding("utf8")
    request.on("data", (chunk) => (text += chunk))
    request.on("end", () => resolve(text))
  })

const API_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
const GATEWAY_TRACE = "0af7651916cd43dd8448eb211c80319c"
const UNSAMPLED_TRACE = "5b8aa5a2d2c872e8321cf37308d69df2"
const clientParent = (trace: string) => `00-${trace}-00f067aa0ba902b7-01`
const PROMPT = "please summarise the quarterly zebra-umbrella-7731 report"
const AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
const PROVIDER_KEY = "sk-provider-secret-tracing-0042"
const OTLP_SECRET = "otlp-collector-token-9911"

const FIXTURE = fileURLToPath(new URL("../fixtures/data/sources/mitre/CVE-2021-44228.json", import.meta.url))
const exported: Array<string> = []
const otlpHeaders: Array<IncomingHttpHeaders> = []
const upstreamHeaders: Array<IncomingHttpHeaders> = []
const receiver = createServer(async (request, response) => {
  const body = await bodyOf(request)
  if (request.url === "/v1/traces") {
    exported.push(body)
    otlpHeaders.push(request.headers)
  }
  response.writeHead(200, { "content-type": "application/json" }).end("{}")
})
const provider = createServer(async (request, response) => {
  await bodyOf(request)
  upstreamHeaders.push(request.headers)
  response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model: "gpt-4o-mini",
    choices: [{ index: 0, message: { role: "assistant", content: "done" }, finish_reason: "stop" }],
    usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 }
  }))
})

let server: RunningServer
let env: Record<string, string>
const secrets: Array<string> = [PROMPT, AWS_KEY, PROVIDER_KEY, OTLP_SECRET]
let spans: Array<OtlpSpan> = []
let stderr = ""

beforeAll(async () => {
  const otlpPort = await listen(receiver)
  const providerPort = await listen(provider)
  env = {
    VDB_DATA_DIR: tempDataDir(),
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlpPort}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_EXPORTER_OTLP_HEADERS: `authorization=Bearer%20${OTLP_SECRET}`,
    OTEL_SERVICE_NAME: "vdb-test",
    VDB_PROVIDER_OPENAI_BASE_URL: `http://127.0.0.1:${providerPort}/v1`
  }
  server = await startServer(env, ["api", "gateway"])
  const created = await runVdb(
    ["org", "create", "--name", "traced", "--per-minute", "0", "--per-week", "0", "--json"],
    env
  )
  expect(created.code, created.stderr).toBe(0)
  const org = JSON.parse(created.stdout) as { uuid: string; apiKey: string }
  const serviceKey = await runVdb(["gateway", "service-key", "create", "--org", org.uuid, "--json"], env)
  expect(serviceKey.code, serviceKey.stderr).toBe(0)
  const { key } = JSON.parse(serviceKey.stdout) as { key: string }
  const set = await runVdb(
    ["gateway", "provider-key", "set", "--org", org.uuid, "--provider", "openai"],
    env,
    PROVIDER_KEY
  )
  expect(set.code, set.stderr).toBe(0)
  secrets.push(org.apiKey, key)
  // A guardrail that matches part of the prompt: the matched text is redacted upstream and never exported.
  const manage = (path: string, body: unknown) =>
    fetch(`http://127.0.0.1:${server.ports.gateway}/manage/v1/${path}`, {
      method: "POST",
      headers: { authorization: org.apiKey, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
  const rule = await manage("guardrails", { name: "zebra", rule_type: "pii_redact", pattern: "zebra-umbrella-[0-9]+" })
  expect(rule.status, await rule.text()).toBeLessThan(300)
  const checked = await manage("guardrails/check", { text: `the ${PROMPT}` })
  expect(checked.status, await checked.text()).toBe(200)
  const ingested = await runVdb(["ingest", "mitre", FIXTURE, "--json"], env)
  expect(ingested.code, ingested.stderr).toBe(0)

  const api = await fetch(`http://127.0.0.1:${server.ports.api}/v1/vuln/CVE-2021-44228?key=${org.apiKey}`, {
    headers: { authorization: org.apiKey, traceparent: clientParent(API_TRACE) }
  })
  expect(api.status).toBeLessThan(500)
  const chat = await fetch(`http://127.0.0.1:${server.ports.gateway}/openai/${org.uuid}/v1/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      traceparent: clientParent(GATEWAY_TRACE)
    },
    body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: `${PROMPT} ${AWS_KEY}` }] })
  })
  expect(chat.status, await chat.text()).toBe(200)
  // A client's trace it chose not to sample (flag 00): continued, but nothing of it exported.
  const unsampled = await fetch(`http://127.0.0.1:${server.ports.gateway}/openai/${org.uuid}/v1/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": "application/json",
      traceparent: `00-${UNSAMPLED_TRACE}-00f067aa0ba902b7-00`
    },
    body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hello" }] })
  })
  expect(unsampled.status, await unsampled.text()).toBe(200)
  await server.stop()
  stderr = server.output().stderr
  spans = exported.flatMap((body) =>
    (JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<OtlpSpan> }> }> }).resourceSpans
      .flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))
  )
}, 60_000)

afterAll(async () => {
  await server?.stop("SIGKILL")
  receiver.close()
  provider.close()
})

const named = (name: string) => spans.filter((span) => span.name === name)
const byId = (id: string | undefined) => spans.find((span) => span.spanId === id)

describe("traces over OTLP/HTTP", () => {
  it("exports to the configured endpoint with OTEL_EXPORTER_OTLP_HEADERS, and never logs those headers", () => {
    expect(exported.length).toBeGreaterThan(0)
    expect(otlpHeaders[0]!.authorization).toBe(`Bearer ${OTLP_SECRET}`)
    expect(stderr).not.toContain(OTLP_SECRET)
  })

  it("the API request: a server span named by its route template, continuing the client's trace, with authentication and SQL below it", () => {
    const request = spans.find((span) => span.traceId === API_TRACE && span.kind === 2)
    expect(request?.name).toBe("GET /v1/vuln/:identifier")
    expect(request?.parentSpanId).toBe("00f067aa0ba902b7")
    const inTrace = spans.filter((span) => span.traceId === API_TRACE)
    expect(inTrace.find((span) => span.name === "api.authenticate")?.parentSpanId).toBe(request?.spanId)
    expect(
      inTrace.some((span) =>
        span.name.startsWith("sql.") || span.name.includes("postgres") || span.name.includes("pglite")
      )
    ).toBe(true)
  })

  it("the gateway request: its server span continues the client's trace; the upstream call is its descendant and sent the provider a traceparent of that trace", () => {
    const request = spans.find((span) => span.traceId === GATEWAY_TRACE && span.kind === 2)
    expect(request?.name).toBe("POST /:provider/:org/v1/chat/completions")
    expect(request?.parentSpanId).toBe("00f067aa0ba902b7")
    for (const step of ["gateway.authenticate", "gateway.firewall"]) {
      expect(named(step).find((span) => span.traceId === GATEWAY_TRACE)?.parentSpanId, step).toBe(request?.spanId)
    }
    const upstream = named("gateway.upstream").find((span) => span.traceId === GATEWAY_TRACE)
    expect(upstream).toBeDefined()
    let ancestor = byId(upstream!.parentSpanId)
    while (ancestor !== undefined && ancestor !== request) ancestor = byId(ancestor.parentSpanId)
    expect(ancestor).toBe(request)
    const sent = upstreamHeaders.at(-2)!.traceparent as string
    expect(sent).toBe(`00-${GATEWAY_TRACE}-${upstream!.spanId}-01`)
  })

  it("an unsampled client trace: the provider still gets a traceparent of that trace (flag 00, a fresh span id); no span of it is exported", () => {
    const sent = upstreamHeaders.at(-1)!.traceparent as string
    expect(sent).toMatch(new RegExp(`^00-${UNSAMPLED_TRACE}-[0-9a-f]{16}-00$`))
    expect(sent.split("-")[2]).not.toBe("00f067aa0ba902b7")
    expect(spans.filter((span) => span.traceId === UNSAMPLED_TRACE)).toEqual([])
  })

  it("an ingestion sent over the admin socket: a run span, its batches, and both phases below them", () => {
    const run = named("Ingest.run")[0]
    expect(run).toBeDefined()
    const batch = named("Ingest.batch").find((span) => span.parentSpanId === run!.spanId)
    expect(batch).toBeDefined()
    for (const phase of ["VulnStore.putRaw", "VulnStore.putNormalised"]) {
      expect(named(phase).some((span) => span.parentSpanId === batch!.spanId), phase).toBe(true)
    }
  })

  it("the access-log lines carry the trace ids", () => {
    const lines = stderr.split("\n").filter((line) => line.includes(`"message":"request"`))
    expect(lines.some((line) => line.includes(`"traceId":"${API_TRACE}"`))).toBe(true)
    expect(lines.some((line) => line.includes(`"traceId":"${GATEWAY_TRACE}"`))).toBe(true)
  })

  it("no exported byte holds a key, the prompt, a matched text or a query value", () => {
    const payload = exported.join("\n")
    for (const secret of secrets) expect(payload).not.toContain(secret)
    expect(payload).not.toContain("zebra-umbrella")
  })
})
