import { ConfigProvider, Effect, Layer } from "effect"
import { HttpTraceContext } from "effect/http"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { TracingLayer, TracingOn } from "../../src/observability/Tracing.ts"

/**
 * `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG` and the off switch, in process: 200 root spans
 * (each with a child) through `TracingLayer` to a loopback OTLP/HTTP JSON receiver, counted once
 * the layer has closed (the exporter flushes on close).
 */
let names: Array<string> = []
const receiver = createServer((request, response) => {
  let body = ""
  request.setEncoding("utf8")
  request.on("data", (chunk) => (body += chunk))
  request.on("end", () => {
    const data = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<{ name: string }> }> }> }
    for (const r of data.resourceSpans) for (const s of r.scopeSpans) for (const span of s.spans) names.push(span.name)
    response.writeHead(200, { "content-type": "application/json" }).end("{}")
  })
})
let endpoint = ""
beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
})
afterAll(() => receiver.close())

const REMOTE = HttpTraceContext.fromHeaders(
  { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" } as never
)

const exportedWith = async (env: Record<string, string>, remoteParent = false) => {
  names = []
  const root = Effect.withSpan(
    Effect.withSpan(Effect.void, "child"),
    "root",
    remoteParent && REMOTE._tag === "Some" ? { parent: REMOTE.value } : {}
  )
  const on = await Effect.runPromise(
    Effect.gen(function*() {
      yield* Effect.forEach(Array.from({ length: 200 }), () => root, { discard: true })
      return yield* TracingOn
    }).pipe(
      Effect.provide(TracingLayer.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env)))))
    )
  )
  return {
    on,
    roots: names.filter((name) => name === "root").length,
    children: names.filter((name) => name === "child").length
  }
}

describe("trace sampling", () => {
  it("unset endpoint: off, nothing exported", async () => {
    expect(await exportedWith({})).toEqual({ on: false, roots: 0, children: 0 })
  })

  it("the default keeps every span", async () => {
    expect(await exportedWith({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }))
      .toEqual({ on: true, roots: 200, children: 200 })
  })

  it("traceidratio 0.1 keeps about a tenth of the traces, each whole", async () => {
    const { children, roots } = await exportedWith({
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_TRACES_SAMPLER: "traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0.1"
    })
    expect(roots).toBeGreaterThan(2)
    expect(roots).toBeLessThan(60)
    expect(children).toBe(roots)
  })

  it("parentbased_traceidratio follows a client's sampled flag, whatever the ratio", async () => {
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0"
    }
    expect(await exportedWith(env, true)).toEqual({ on: true, roots: 200, children: 200 })
    expect(await exportedWith(env)).toEqual({ on: true, roots: 0, children: 0 })
  })
})
