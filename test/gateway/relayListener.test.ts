import { request as httpRequest } from "node:http"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { makeLineWriter } from "../../src/server/LineWriter.ts"
import { ANTHROPIC_KEY, type Gateway, ORG, SERVICE_KEY, startGateway } from "./harness.ts"
import { disconnectMidStream, type Reply, send } from "./http.ts"

// The inference routes answered below the router (src/gateway/RelayListener.ts, as `bin/vdb serve`
// runs the gateway) against the same routes through `HttpRouter`: same answers, byte for byte.
const chunks: Array<string> = []
const accessLog = makeLineWriter((chunk) => chunks.push(chunk))
const lines = () => {
  accessLog.flush()
  return chunks.join("").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))
}

let listener: Gateway
let router: Gateway
beforeAll(async () => {
  listener = await startGateway({ path: "listener", accessLog })
  router = await startGateway({ path: "router" })
})
afterAll(async () => {
  await listener.close()
  await router.close()
})
beforeEach(() => {
  chunks.length = 0
  for (const gateway of [listener, router]) {
    gateway.upstream.reset()
    gateway.backends.authDown = false
  }
})

const openAi = { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" }
const anthropic = { "x-api-key": SERVICE_KEY, "content-type": "application/json", "anthropic-version": "2023-06-01" }

/** Headers that differ per request or per connection, whichever path answers. */
const VARYING = new Set(["date", "x-gateway-firewall-request-id", "keep-alive", "connection"])
const stable = (reply: Reply) => ({
  status: reply.status,
  headers: Object.fromEntries(Object.entries(reply.headers).filter(([name]) => !VARYING.has(name))),
  body: reply.body.toString("utf8").replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, "<uuid>")
})

const both = async (path: string, options: Parameters<typeof send>[1]) => {
  const fast = await send(`${listener.url}${path}`, options)
  const routed = await send(`${router.url}${path}`, options)
  return { fast, routed }
}

describe("inference answered below the router", () => {
  const cases: ReadonlyArray<readonly [string, string, Parameters<typeof send>[1]]> = [
    ["chat", `/openai/${ORG}/v1/chat/completions`, {
      headers: openAi,
      body: JSON.stringify({ model: "gpt-4.1", messages: [] })
    }],
    ["chat, gzip", `/openai/${ORG}/v1/chat/completions`, {
      headers: { ...openAi, "accept-encoding": "gzip" },
      body: JSON.stringify({ model: "gpt-4.1", messages: [{ role: "user", content: "x".repeat(4000) }] })
    }],
    ["chat, streamed", `/openai/${ORG}/v1/chat/completions`, {
      headers: openAi,
      body: JSON.stringify({ model: "gpt-4.1", stream: true })
    }],
    ["responses", `/openai/${ORG}/v1/responses?x=1`, {
      headers: openAi,
      body: JSON.stringify({ model: "gpt-4.1", input: "hi" })
    }],
    ["legacy chat (organization in a header)", "/openai/v1/chat/completions", {
      headers: { ...openAi, "x-organisation-uuid": ORG },
      body: JSON.stringify({ model: "gpt-4.1", messages: [] })
    }],
    ["messages", `/anthropic/${ORG}/v1/messages`, {
      headers: anthropic,
      body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 5, messages: [] })
    }],
    ["count_tokens", `/anthropic/${ORG}/v1/messages/count_tokens`, {
      headers: anthropic,
      body: JSON.stringify({ model: "claude-sonnet-4-5", messages: [] })
    }],
    ["wrong key (401)", `/openai/${ORG}/v1/chat/completions`, {
      headers: { ...openAi, authorization: "Bearer nope" },
      body: "{}"
    }],
    ["no organization (401)", "/anthropic/v1/messages", { headers: anthropic, body: "{}" }],
    ["invalid JSON (400)", `/openai/${ORG}/v1/chat/completions`, { headers: openAi, body: "{not json" }],
    ["no model (400)", `/openai/${ORG}/v1/chat/completions`, { headers: openAi, body: "{}" }],
    ["unknown provider (404)", `/nosuch/${ORG}/v1/chat/completions`, { headers: openAi, body: "{}" }],
    ["surface the provider lacks", `/anthropic/${ORG}/v1/chat/completions`, { headers: openAi, body: "{}" }],
    ["declared body over 8 MiB (413)", `/openai/${ORG}/v1/chat/completions`, {
      headers: { ...openAi, "content-length": String(9 * 1024 * 1024) },
      body: Buffer.alloc(0)
    }]
  ]
  for (const [name, path, options] of cases) {
    it(`gives the router's answer: ${name}`, async () => {
      const { fast, routed } = await both(path, options)
      expect(stable(fast)).toEqual(stable(routed))
    })
  }

  it("a provider failure is answered the same way (502 in the dialect)", async () => {
    for (const gateway of [listener, router]) gateway.backends.authDown = true
    const { fast, routed } = await both(`/openai/${ORG}/v1/chat/completions`, {
      headers: openAi,
      body: JSON.stringify({ model: "gpt-4.1" })
    })
    expect(fast.status).toBeGreaterThanOrEqual(500)
    expect(stable(fast)).toEqual(stable(routed))
  })

  it("takes only the inference routes, and logs each one it answers", async () => {
    const header = { ...openAi, "x-request-id": "listener-test-1" }
    expect(
      (await send(`${listener.url}/openai/${ORG}/v1/chat/completions`, {
        headers: header,
        body: JSON.stringify({ model: "gpt-4.1" })
      })).status
    ).toBe(200)
    expect(
      (await send(`${listener.url}/openai/${ORG}/v1/chat/completions?key=secret`, { headers: openAi, body: "{}" }))
        .status
    ).toBe(400)
    // Not inference: the router answers (and the harness's router has no access log).
    expect((await send(`${listener.url}/openai/${ORG}/v1/models`, { method: "GET", headers: openAi })).status).toBe(200)
    expect((await send(`${listener.url}/healthz`, { method: "GET" })).status).toBe(200)
    const logged = lines().map((line) => line.annotations)
    expect(logged).toEqual([
      expect.objectContaining({
        service: "gateway",
        requestId: "listener-test-1",
        method: "POST",
        route: `/openai/${ORG}/v1/chat/completions`,
        status: 200
      }),
      // No query string in the log, ever.
      expect.objectContaining({ method: "POST", route: `/openai/${ORG}/v1/chat/completions`, status: 400 })
    ])
    expect(lines()[0].fiberId).toMatch(/^#\d+$/)
  })

  it("a client that goes away mid-stream is logged 499 and the upstream call is aborted", async () => {
    await disconnectMidStream(listener.upstream, `${listener.url}/openai/${ORG}/v1/chat/completions`, openAi)
    for (let i = 0; i < 50 && lines().length === 0; i++) await new Promise((r) => setTimeout(r, 20))
    expect(lines().map((line) => line.annotations.status)).toEqual([499])
  })

  it("an upstream that breaks off mid-stream ends the client's response after the frames it sent, on both paths, logged 502", async () => {
    for (const gateway of [listener, router]) {
      chunks.length = 0
      gateway.upstream.respondWith((_request, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" })
        res.write("data: first\n\n", () => setTimeout(() => res.socket?.destroy(), 20))
      })
      const received: Array<string> = []
      const ended = await new Promise<string>((resolve) => {
        const req = httpRequest(
          `${gateway.url}/openai/${ORG}/v1/chat/completions`,
          { method: "POST", headers: openAi },
          (res) => {
            res.on("data", (chunk: Buffer) => received.push(chunk.toString("utf8")))
            res.on("end", () => resolve("end"))
            res.on("error", () => resolve("error"))
          }
        )
        req.on("error", () => resolve("error"))
        req.end(JSON.stringify({ model: "gpt-4.1", stream: true }))
      })
      // Never a clean end: a truncated stream must not look complete to the client.
      expect(ended).toBe("error")
      expect(received.join("")).toBe("data: first\n\n")
      if (gateway === listener) {
        // Not the 499 of a client that went away: the upstream broke off (the harness's router has no access log).
        for (let i = 0; i < 50 && lines().length === 0; i++) await new Promise((r) => setTimeout(r, 20))
        expect(lines().map((line) => line.annotations.status)).toEqual([502])
      }
      gateway.upstream.reset()
      // The gateway keeps serving.
      const next = await send(`${gateway.url}/openai/${ORG}/v1/chat/completions`, {
        headers: openAi,
        body: JSON.stringify({ model: "gpt-4.1" })
      })
      expect(next.status).toBe(200)
    }
  })

  it("relays the provider key and the exact body upstream", async () => {
    const body = `{"model":"claude-sonnet-4-5",  "max_tokens":5,"messages":[{"role":"user","content":"h\\u00e9"}]}`
    const reply = await send(`${listener.url}/anthropic/${ORG}/v1/messages`, { headers: anthropic, body })
    expect(reply.status).toBe(200)
    expect(listener.upstream.received[0]!.body.toString("utf8")).toBe(body)
    expect(listener.upstream.received[0]!.headers["x-api-key"]).toBe(ANTHROPIC_KEY)
  })
})
