import { ConfigProvider, Effect, Layer, Option, References } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { TracingLayer } from "../../src/observability/Tracing.ts"
import { accessLog, AccessLogWriter } from "../../src/server/AccessLog.ts"

/**
 * The router's requests (the API, the site, MCP, the gateway's other routes) under `TracingLayer`
 * and the access log's middleware, as `src/server/Serve.ts` serves them: with tracing off no span
 * is made at all; on, the sampler is asked once per request before the platform makes its span,
 * and a request it does not keep gets no span, only an unsampled parent that keeps its children
 * unexported. Spans go to a loopback OTLP/HTTP JSON receiver, read once the handler is disposed.
 */
interface Exported {
  readonly name: string
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
}
let exported: Array<Exported> = []
const receiver = createServer((request, response) => {
  let body = ""
  request.setEncoding("utf8")
  request.on("data", (chunk) => (body += chunk))
  request.on("end", () => {
    const data = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<Exported> }> }> }
    for (const r of data.resourceSpans) for (const s of r.scopeSpans) exported.push(...s.spans)
    response.writeHead(200, { "content-type": "application/json" }).end("{}")
  })
})
let endpoint = ""
beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
})
afterAll(() => receiver.close())

/** What the handler saw: its parent span (tag, sampled, trace id) and whether spans are made at all. */
interface Seen {
  readonly parent: { readonly tag: string; readonly sampled: boolean; readonly traceId: string } | null
  readonly tracerEnabled: boolean
}

const probe = HttpRouter.add(
  "GET",
  "/probe",
  Effect.gen(function*() {
    const parent = Option.getOrUndefined(yield* Effect.option(Effect.currentParentSpan))
    const seen: Seen = {
      parent: parent === undefined ? null : { tag: parent._tag, sampled: parent.sampled, traceId: parent.traceId },
      tracerEnabled: yield* References.TracerEnabled
    }
    // A child, as a SQL statement's span would be: exported only under a kept request.
    return yield* Effect.withSpan(Effect.succeed(HttpServerResponse.jsonUnsafe(seen)), "probe.child")
  })
)

const served = async (env: Record<string, string>, count: number, headers: Record<string, string> = {}) => {
  exported = []
  const { dispose, handler } = HttpRouter.toWebHandler(
    Layer.mergeAll(
      probe,
      TracingLayer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env)))),
      Layer.succeed(AccessLogWriter)({ write: () => undefined, flush: () => undefined })
    ),
    { disableLogger: true, middleware: accessLog("api") }
  )
  const seen: Array<Seen> = []
  for (let i = 0; i < count; i++) {
    const response = await handler(new Request("http://localhost/probe", { headers }))
    expect(response.status).toBe(200)
    seen.push(await response.json() as Seen)
  }
  await dispose()
  return seen
}

const CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
const on = (ratio: string) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
  OTEL_TRACES_SAMPLER_ARG: ratio
})

describe("router requests and tracing", () => {
  it("off: no span at all, not even the native tracer's request span", async () => {
    const [seen] = await served({}, 1)
    expect(seen).toEqual({ parent: null, tracerEnabled: false })
  })

  it("on, not kept: no span, an unsampled parent continuing the client's trace, nothing exported", async () => {
    const [fresh] = await served(on("0"), 1)
    expect(fresh!.parent).toMatchObject({ tag: "ExternalSpan", sampled: false })
    expect(fresh!.parent!.traceId).toMatch(/^[0-9a-f]{32}$/)
    const [continued] = await served(on("0"), 1, { traceparent: `00-${CLIENT_TRACE}-00f067aa0ba902b7-00` })
    expect(continued!.parent).toEqual({ tag: "ExternalSpan", sampled: false, traceId: CLIENT_TRACE })
    expect(exported).toEqual([])
  })

  it("on, kept by the client's flag: the platform's request span, its child below it", async () => {
    const [seen] = await served(on("0"), 1, { traceparent: `00-${CLIENT_TRACE}-00f067aa0ba902b7-01` })
    expect(seen!.parent).toEqual({ tag: "Span", sampled: true, traceId: CLIENT_TRACE })
    const request = exported.find((span) => span.name === "GET /probe")
    const child = exported.find((span) => span.name === "probe.child")
    expect(request).toMatchObject({ traceId: CLIENT_TRACE, parentSpanId: "00f067aa0ba902b7" })
    expect(child).toMatchObject({ traceId: CLIENT_TRACE, parentSpanId: request!.spanId })
  })

  it("on at a ratio of 0.5: each request is decided once (about half kept, not a quarter), each kept one whole", async () => {
    const seen = await served(on("0.5"), 200)
    const kept = seen.filter((s) => s.parent?.sampled).length
    // Binomial(200, 0.5): 100 ± 7; decided twice it would be 50 ± 6.
    expect(kept).toBeGreaterThan(70)
    expect(kept).toBeLessThan(130)
    expect(exported.filter((span) => span.name === "GET /probe")).toHaveLength(kept)
    expect(exported.filter((span) => span.name === "probe.child")).toHaveLength(kept)
  })
})
