import { Effect } from "effect"
import { request as httpRequest } from "node:http"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { type Gateway, OPENAI_KEY, ORG, SERVICE_KEY, startGateway } from "./harness.ts"
import { disconnectMidStream, send } from "./http.ts"

let gateway: Gateway
beforeAll(async () => {
  gateway = await startGateway({ timeout: "300 millis" })
})
afterAll(() => gateway.close())
beforeEach(() => {
  gateway.upstream.reset()
  gateway.backends.authDown = false
  gateway.backends.providerDown = false
})

const chatUrl = () => `${gateway.url}/openai/${ORG}/v1/chat/completions`
const auth = { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" }

describe("byte-faithful relay", () => {
  it("sends the body upstream byte for byte", async () => {
    const body = `{
  "zeta" : 1,"model":"gpt-4.1",   "messages":[{"role":"user","content":"h\\u00e9llo 👋 \\ud83d\\ude00 ünïcödé"}],
  "numbers": [1.0, 1e2, -0.0, 12345678901234567890], "nested": {"b": null, "a": [true, false]},
  "alpha\\t": "tab\\tand\\"quote", "dup": 1, "dup": 2
}
`
    const reply = await send(chatUrl(), { headers: auth, body })
    expect(reply.status).toBe(200)
    expect(gateway.upstream.received[0]!.body.equals(Buffer.from(body, "utf8"))).toBe(true)
  })

  it("relays a streamed response identically, the first chunk before the upstream finishes", async () => {
    const frames = ["data: {\"a\":1}\n\n", "data: {\"b\":\"ü\"}\n\n", ": comment\n\n", "data: [DONE]\n\n"]
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    gateway.upstream.respondWith((_request, res) => {
      res.writeHead(200, { "content-type": "text/event-stream", "x-gateway-secret": "drop-me", "x-request-id": "up-1" })
      res.write(frames[0])
      void gate.then(() => {
        for (const frame of frames.slice(1)) res.write(frame)
        res.end()
      })
    })
    const received: Array<Buffer> = []
    const done = new Promise<{ headers: Record<string, unknown> }>((resolve, reject) => {
      const req = httpRequest(chatUrl(), { method: "POST", headers: auth }, (res) => {
        res.on("data", (chunk: Buffer) => {
          received.push(chunk)
          if (received.length === 1) release() // the upstream is still holding the rest
        })
        res.on("end", () => resolve({ headers: res.headers }))
        res.on("error", reject)
      })
      req.end(JSON.stringify({ model: "gpt-4.1", stream: true, messages: [] }))
    })
    const { headers } = await done
    expect(Buffer.concat(received).toString("utf8")).toBe(frames.join(""))
    expect(received[0]!.toString("utf8")).toBe(frames[0])
    expect(headers["content-type"]).toBe("text/event-stream")
    expect(headers["x-request-id"]).toBe("up-1")
    expect(headers["x-gateway-secret"]).toBeUndefined()
    expect(headers["x-gateway-firewall-decision"]).toBe("allow")
    expect(headers["x-gateway-firewall-request-id"]).toMatch(/^[0-9a-f-]{36}$/)
  })

  it("aborts the upstream request when the client disconnects mid-stream", async () => {
    await disconnectMidStream(gateway.upstream, chatUrl(), auth)
  })
})

describe("headers", () => {
  it("strips credentials, accept-encoding, hop-by-hop, Connection-named and X-Gateway-* headers", async () => {
    await send(chatUrl(), {
      headers: {
        ...auth,
        "x-api-key": SERVICE_KEY,
        "accept-encoding": "gzip, br",
        connection: "keep-alive, x-hop-custom",
        "keep-alive": "timeout=5",
        "x-hop-custom": "gone",
        te: "trailers",
        "x-gateway-nonce-mode": "enforce",
        "X-Gateway-Anything": "x",
        "openai-organization": "org-abc",
        "x-custom-header": "kept",
        "user-agent": "test-agent/1.0"
      },
      body: JSON.stringify({ model: "gpt-4.1", messages: [] })
    })
    const headers = gateway.upstream.received[0]!.headers
    expect(headers.authorization).toBe(`Bearer ${OPENAI_KEY}`)
    expect(headers["x-api-key"]).toBeUndefined()
    expect(headers["accept-encoding"]).not.toBe("gzip, br")
    expect(headers["x-hop-custom"]).toBeUndefined()
    expect(headers["keep-alive"]).toBeUndefined()
    expect(headers.te).toBeUndefined()
    expect(headers["x-gateway-nonce-mode"]).toBeUndefined()
    expect(headers["x-gateway-anything"]).toBeUndefined()
    expect(headers["openai-organization"]).toBe("org-abc")
    expect(headers["x-custom-header"]).toBe("kept")
    expect(headers["user-agent"]).toBe("test-agent/1.0")
  })

  it("with tracing off, forwards a client's traceparent and tracestate as sent and adds none", async () => {
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    await send(chatUrl(), {
      headers: { ...auth, traceparent, tracestate: "vendor=opaque", "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4.1", messages: [] })
    })
    await send(chatUrl(), {
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4.1", messages: [] })
    })
    const [traced, untraced] = gateway.upstream.received
    expect(traced!.headers.traceparent).toBe(traceparent)
    expect(traced!.headers.tracestate).toBe("vendor=opaque")
    expect(untraced!.headers.traceparent).toBeUndefined()
    expect(untraced!.headers.b3).toBeUndefined()
  })

  it("sets provider default headers only when the client sent none", async () => {
    const url = `${gateway.url}/anthropic/${ORG}/v1/messages`
    const body = JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 8, messages: [] })
    await send(url, { headers: { "x-api-key": SERVICE_KEY, "content-type": "application/json" }, body })
    await send(url, {
      headers: { "x-api-key": SERVICE_KEY, "anthropic-version": "2099-01-01", "content-type": "application/json" },
      body
    })
    const [first, second] = gateway.upstream.received
    expect(first!.headers["anthropic-version"]).toBe("2023-06-01")
    expect(second!.headers["anthropic-version"]).toBe("2099-01-01")
  })

  it("forwards the query string", async () => {
    await send(`${gateway.url}/anthropic/${ORG}/v1/messages?beta=true`, {
      headers: { "x-api-key": SERVICE_KEY },
      body: JSON.stringify({ model: "claude-sonnet-4-5", messages: [] })
    })
    expect(gateway.upstream.received[0]!.url).toBe("/v1/messages?beta=true")
  })
})

describe("request validation", () => {
  it("refuses invalid JSON, a missing model and an oversized body in the route's dialect", async () => {
    const invalid = await send(chatUrl(), { headers: auth, body: "{not json" })
    expect(invalid.status).toBe(400)
    expect(invalid.json().error).toMatchObject({ message: "invalid JSON body", type: "invalid_request_error" })

    const noModel = await send(`${gateway.url}/anthropic/${ORG}/v1/messages`, {
      headers: { "x-api-key": SERVICE_KEY },
      body: JSON.stringify({ messages: [] })
    })
    expect(noModel.status).toBe(400)
    expect(noModel.json()).toMatchObject({
      type: "error",
      error: { type: "invalid_request_error", message: "model is required" }
    })
    expect(gateway.upstream.received).toHaveLength(0)
  })

  it("answers 413 while reading, without waiting for the whole body", async () => {
    const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${gateway.url}/anthropic/${ORG}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": SERVICE_KEY, "transfer-encoding": "chunked" }
      }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks).toString() }))
      })
      req.on("error", reject)
      const megabyte = Buffer.alloc(1024 * 1024, 0x20)
      // 9 MiB written, never ended: the gateway must answer on its own.
      for (let i = 0; i < 9; i++) req.write(megabyte)
    })
    expect(reply.status).toBe(413)
    expect(JSON.parse(reply.body)).toMatchObject({
      type: "error",
      error: { type: "request_too_large", code: "request_too_large" }
    })
  })

  it("answers 413 from a declared content-length", async () => {
    const reply = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(chatUrl(), {
        method: "POST",
        headers: { ...auth, "content-length": String(9 * 1024 * 1024) }
      }, (res) => {
        res.resume()
        resolve(res.statusCode!)
      })
      req.on("error", reject)
      req.write("{")
    })
    expect(reply).toBe(413)
  })
})

describe("routing and authentication", () => {
  it("leaves /healthz to the server and answers other paths in dialect", async () => {
    const health = await send(`${gateway.url}/healthz`, { method: "GET" })
    expect(health.status).toBe(200)
    const other = await send(`${gateway.url}/openai/${ORG}/v1/embeddings`, { headers: auth, body: "{}" })
    expect(other.status).toBe(404)
    expect(other.json().error.code).toBe("unsupported_api")
    const root = await send(`${gateway.url}/`, { method: "GET" })
    expect(root.status).toBe(404)
    expect(root.json().error.code).toBe("not_found")
  })

  it("gives 414 uri_too_long in the route's dialect for a segment longer than the router reads", async () => {
    const long = "A".repeat(3000)
    const openai = await send(`${gateway.url}/openai/${long}/v1/chat/completions`, { headers: auth, body: "{}" })
    expect(openai.status).toBe(414)
    expect(openai.json().error).toMatchObject({ code: "uri_too_long", type: "invalid_request_error" })
    const anthropic = await send(`${gateway.url}/anthropic/${long}/v1/messages`, { headers: auth, body: "{}" })
    expect(anthropic.status).toBe(414)
    expect(anthropic.json()).toMatchObject({
      type: "error",
      error: { code: "uri_too_long", type: "invalid_request_error" }
    })
    // Up to the limit, the organization is read and refused as any unknown one.
    const atLimit = await send(`${gateway.url}/openai/${"A".repeat(2048)}/v1/chat/completions`, {
      headers: auth,
      body: "{}"
    })
    expect(atLimit.status).toBe(401)
  })

  it("gives 404 unknown_provider for an unknown slug", async () => {
    const reply = await send(`${gateway.url}/nope/${ORG}/v1/chat/completions`, { headers: auth, body: "{}" })
    expect(reply.status).toBe(404)
    expect(reply.json().error).toMatchObject({ code: "unknown_provider", type: "not_found_error" })
    expect(reply.headers["x-gateway-firewall-request-id"]).toBeDefined()
  })

  it("gives 404 unsupported_api naming the route to use", async () => {
    const reply = await send(`${gateway.url}/openai/${ORG}/v1/messages`, { headers: auth, body: "{}" })
    expect(reply.status).toBe(404)
    expect(reply.json().error).toMatchObject({ code: "unsupported_api", type: "not_found_error" })
    expect(reply.json().error.message).toContain(
      "POST /openai/{org}/v1/chat/completions or POST /openai/{org}/v1/responses"
    )
    const groq = await send(`${gateway.url}/groq/${ORG}/v1/responses`, { headers: auth, body: "{}" })
    expect(groq.json().error.code).toBe("unsupported_api")
  })

  it("accepts the legacy form with X-Organisation-UUID", async () => {
    const body = JSON.stringify({ model: "gpt-4.1", messages: [] })
    const ok = await send(`${gateway.url}/openai/v1/chat/completions`, {
      headers: { ...auth, "x-organisation-uuid": ORG },
      body
    })
    expect(ok.status).toBe(200)
    const noOrg = await send(`${gateway.url}/openai/v1/chat/completions`, { headers: auth, body })
    expect(noOrg.status).toBe(401)
    expect(noOrg.json().error.code).toBe("invalid_api_key")
  })

  it("gives 401 invalid_api_key for every authentication failure", async () => {
    const body = JSON.stringify({ model: "gpt-4.1", messages: [] })
    const cases: Array<{ url: string; headers: Record<string, string> }> = [
      { url: chatUrl(), headers: {} },
      { url: chatUrl(), headers: { authorization: "Bearer wrong" } },
      { url: chatUrl(), headers: { authorization: `Bearer ${OPENAI_KEY}` } },
      { url: `${gateway.url}/openai/not-a-uuid/v1/chat/completions`, headers: auth },
      { url: `${gateway.url}/openai/v1/responses`, headers: auth }
    ]
    for (const { headers, url } of cases) {
      const reply = await send(url, { headers, body })
      expect(reply.status).toBe(401)
      expect(reply.json().error).toMatchObject({ code: "invalid_api_key", type: "authentication_error" })
    }
    const viaApiKey = await send(chatUrl(), { headers: { "x-api-key": SERVICE_KEY }, body })
    expect(viaApiKey.status).toBe(200)
    expect(gateway.upstream.received).toHaveLength(1)
  })

  it("fails closed with 503 when the authentication backend is down", async () => {
    gateway.backends.authDown = true
    const reply = await send(chatUrl(), { headers: auth, body: JSON.stringify({ model: "m" }) })
    expect(reply.status).toBe(503)
    expect(reply.json().error.type).toBe("api_error")
    expect(gateway.upstream.received).toHaveLength(0)
  })
})

describe("upstream failures", () => {
  it("relays a provider 429 as is", async () => {
    gateway.upstream.respondWith((_request, res) => {
      res.writeHead(429, { "content-type": "application/json", "retry-after": "7" })
      res.end(`{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limited"}}`)
    })
    const reply = await send(chatUrl(), { headers: auth, body: JSON.stringify({ model: "m" }) })
    expect(reply.status).toBe(429)
    expect(reply.headers["retry-after"]).toBe("7")
    expect(reply.body.toString()).toBe(
      `{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limited"}}`
    )
  })

  it("answers 502 when the provider cannot be reached", async () => {
    const unreachable = await startGateway()
    await unreachable.upstream.close()
    try {
      const reply = await send(`${unreachable.url}/openai/${ORG}/v1/chat/completions`, {
        headers: auth,
        body: JSON.stringify({ model: "m", stream: true })
      })
      expect(reply.status).toBe(502)
      expect(reply.json().error.type).toBe("api_error")
    } finally {
      await unreachable.close().catch(() => undefined)
    }
  })

  it("answers 502 when a non-streaming request exceeds the upstream timeout", async () => {
    gateway.upstream.respondWith(() => {
      // never answers
    })
    const reply = await send(chatUrl(), { headers: auth, body: JSON.stringify({ model: "m" }) })
    expect(reply.status).toBe(502)
    expect(reply.json().error.code).toBe("upstream_timeout")
  })
})

describe("models and the inference log", () => {
  it("lists models in the surface's shape without a provider key", async () => {
    const anthropic = await send(`${gateway.url}/anthropic/${ORG}/v1/models`, {
      method: "GET",
      headers: { "x-api-key": SERVICE_KEY }
    })
    expect(anthropic.json()).toMatchObject({
      has_more: false,
      data: expect.arrayContaining([expect.objectContaining({ type: "model" })])
    })
    const groq = await send(`${gateway.url}/groq/${ORG}/v1/models`, { method: "GET", headers: auth })
    expect(groq.status).toBe(200) // no groq key is stored
    expect(groq.json().object).toBe("list")
    expect(gateway.upstream.received).toHaveLength(0)
  })

  it("records inferences (metadata only) and never count_tokens", async () => {
    await Effect.runPromise(gateway.inferenceLog.setEnabled(ORG, true))
    const anthropicHeaders = { "x-api-key": SERVICE_KEY }
    const body = JSON.stringify({ model: "claude-sonnet-4-5", messages: [{ role: "user", content: "secret prompt" }] })
    await send(`${gateway.url}/anthropic/${ORG}/v1/messages`, { headers: anthropicHeaders, body })
    await send(`${gateway.url}/anthropic/${ORG}/v1/messages/count_tokens`, { headers: anthropicHeaders, body })
    await send(chatUrl(), { headers: auth, body: JSON.stringify({ model: "gpt-4.1", stream: true }) })
    await new Promise((resolve) => setTimeout(resolve, 50))
    const entries = await Effect.runPromise(gateway.inferenceLog.recent(ORG, 10))
    await Effect.runPromise(gateway.inferenceLog.setEnabled(ORG, false))
    expect(entries.map((entry) => entry.surface).sort()).toEqual(["chat", "messages"])
    const chat = entries.find((entry) => entry.surface === "chat")!
    expect(chat).toMatchObject({ provider: "openai", model: "gpt-4.1", status: 200, decision: "allow" })
    expect(chat.responseBytes).toBeGreaterThan(0)
    expect(JSON.stringify(entries)).not.toContain("secret prompt")
  })
})

describe("nonces", () => {
  it("issues signed nonces that verify for the organization only", async () => {
    const reply = await send(`${gateway.url}/anthropic/${ORG}/v1/nonces?count=3`, {
      method: "GET",
      headers: { "x-api-key": SERVICE_KEY }
    })
    expect(reply.status).toBe(200)
    const body = reply.json()
    expect(body.count).toBe(3)
    expect(body.nonces).toHaveLength(3)
    expect(new Set(body.nonces).size).toBe(3)
    const expires = Date.parse(body.expires_at)
    expect(expires - Date.now()).toBeGreaterThan(23.9 * 3600_000)
    expect(body.expires_at).toMatch(/Z$/)
    expect(await Effect.runPromise(gateway.nonces.check(ORG, body.nonces[0]))).toBe("valid")
    expect(await Effect.runPromise(gateway.nonces.check("0b0e6d8a-1111-4c5b-8e7f-0a1b2c3d4e5f", body.nonces[0])))
      .toBe("unknown")
    expect(await Effect.runPromise(gateway.nonces.check(ORG, body.nonces[0].slice(0, -2) + "AA"))).toBe("unknown")

    // Out of range is refused, not clamped (issue 9; test/gateway/firewall covers every case).
    const outOfRange = await send(`${gateway.url}/openai/${ORG}/v1/nonces?count=500`, { method: "GET", headers: auth })
    expect(outOfRange.status).toBe(400)
    const byDefault = await send(`${gateway.url}/openai/${ORG}/v1/nonces`, { method: "GET", headers: auth })
    expect(byDefault.json().nonces).toHaveLength(16)
    const unauthenticated = await send(`${gateway.url}/openai/${ORG}/v1/nonces`, { method: "GET" })
    expect(unauthenticated.status).toBe(401)
  })
})
