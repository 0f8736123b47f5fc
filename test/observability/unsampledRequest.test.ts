import { Layer, Tracer } from "effect"
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest"
import { RootSampler, TracingOn } from "../../src/observability/Tracing.ts"
import { type Gateway, ORG, SERVICE_KEY, startGateway } from "../gateway/harness.ts"
import { send } from "../gateway/http.ts"

/**
 * With tracing on, a gateway request the sampler does not keep (90 % of them at a ratio of 0.1)
 * makes no span at all: the sampler is asked before any span exists, and the trace is still
 * continued (the provider gets a `traceparent` with the flag cleared, the access log the trace id).
 * A kept request's spans are decided once, by that same question. The tracer here counts spans.
 */
let spans: Array<{ readonly name: string; readonly sampled: boolean }> = []
let keep = false
let asked = 0
const lines: Array<string> = []
const counting = Tracer.make({
  span(options) {
    spans.push({ name: options.name, sampled: options.sampled })
    return Tracer.nativeTracer.span(options)
  }
})
const tracing = Layer.mergeAll(
  Layer.succeed(TracingOn)(true),
  Layer.succeed(Tracer.Tracer)(counting),
  Layer.succeed(RootSampler)((parent) => {
    asked++
    return keep && (parent === undefined || parent.sampled)
  })
)

let gateway: Gateway
beforeAll(async () => {
  gateway = await startGateway({
    tracing,
    accessLog: { write: (line) => void lines.push(line), flush: () => undefined }
  })
})
afterAll(() => gateway.close())
beforeEach(() => {
  gateway.upstream.reset()
  spans = []
  asked = 0
  lines.length = 0
})

const chat = (headers: Record<string, string> = {}) =>
  send(`${gateway.url}/openai/${ORG}/v1/chat/completions`, {
    headers: { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: "gpt-4.1", messages: [] })
  })
const CLIENT_TRACE = "5b8aa5a2d2c872e8321cf37308d69df2"

describe("a request the sampler does not keep", () => {
  it("makes no span, and still sends the provider a traceparent (flag 00) whose trace id the access log carries", async () => {
    keep = false
    expect((await chat()).status).toBe(200)
    expect((await chat({ traceparent: `00-${CLIENT_TRACE}-00f067aa0ba902b7-01` })).status).toBe(200)
    expect(spans).toEqual([])
    expect(asked).toBe(2)
    const [fresh, continued] = gateway.upstream.received.map((r) => r.headers.traceparent as string)
    expect(fresh).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/)
    expect(continued).toMatch(new RegExp(`^00-${CLIENT_TRACE}-[0-9a-f]{16}-00$`))
    expect(continued!.split("-")[2]).not.toBe("00f067aa0ba902b7")
    // Each line is written once its response has closed.
    await vi.waitFor(() => expect(lines).toHaveLength(2))
    expect(lines.some((line) => line.includes(`"traceId":"${fresh!.split("-")[1]}"`))).toBe(true)
    expect(lines.some((line) => line.includes(`"traceId":"${CLIENT_TRACE}"`))).toBe(true)
  })
})

describe("a request the sampler keeps", () => {
  it("is decided once: its request, authentication, firewall and upstream spans are all sampled", async () => {
    keep = true
    expect((await chat()).status).toBe(200)
    expect(asked).toBe(1)
    expect(spans.map((span) => span.name)).toEqual([
      "POST /:provider/:org/v1/chat/completions",
      "gateway.authenticate",
      "gateway.firewall",
      "gateway.upstream"
    ])
    expect(spans.every((span) => span.sampled)).toBe(true)
    expect(gateway.upstream.received[0]!.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
  })
})
