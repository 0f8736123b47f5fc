import { Effect } from "effect"
import { OtlpSerialization } from "effect/observability"
import type { OtlpTracer } from "effect/observability"
import { describe, expect, it } from "vitest"
import { encodeTraces, layerTraceProtobuf } from "../../src/observability/OtlpTraceProtobuf.ts"

/**
 * The gateway's own protobuf encoder for exported spans writes exactly the bytes Effect's
 * `OtlpSerialization.layerProtobuf` writes, for every field an exported span can carry: a collector
 * sees no difference, only the CPU spent on it changes.
 */
const bodyBytes = (body: unknown): Uint8Array => (body as { readonly body: Uint8Array }).body

const effectEncoded = (data: OtlpTracer.TraceData) =>
  bodyBytes(
    Effect.runSync(
      Effect.provide(
        OtlpSerialization.OtlpSerialization.useSync((s) => s.traces(data)),
        OtlpSerialization.layerProtobuf
      )
    )
  )

const hex = (n: number, seed: number) =>
  Array.from({ length: n }, (_, i) => "0123456789abcdef"[(seed * 7 + i * 13) % 16]).join("")
const long = "x".repeat(300)

const span = (i: number): OtlpTracer.TraceData["resourceSpans"][number]["scopeSpans"][number]["spans"][number] => ({
  traceId: hex(32, i),
  spanId: hex(16, i + 1),
  parentSpanId: i % 3 === 0 ? undefined : hex(16, i + 2),
  name: i % 5 === 0 ? `POST /:provider/:org/v1/chat/completions ünïcode ${long}` : "gateway.upstream",
  kind: i % 6,
  startTimeUnixNano: String(1_764_684_000_000_000_000n + BigInt(i)),
  endTimeUnixNano: String(1_764_684_000_000_300_000n + BigInt(i) * 1_000_000_007n),
  attributes: [
    { key: "gateway.provider", value: { stringValue: "openai" } },
    { key: "http.response.status_code", value: { intValue: 200 + i } },
    { key: "negative", value: { intValue: -5 - i } },
    { key: "big", value: { intValue: "9007199254740993" } },
    { key: "ratio", value: { doubleValue: 0.1 * i } },
    { key: "flag", value: { boolValue: i % 2 === 0 } },
    { key: "list", value: { arrayValue: { values: [{ stringValue: "a" }, { intValue: 3 }] } } },
    { key: "map", value: { kvlistValue: { values: [{ key: "k", value: { stringValue: long } }] } } },
    { key: "raw", value: { bytesValue: new Uint8Array([1, 2, 255]) } },
    { key: "empty", value: {} }
  ],
  droppedAttributesCount: i % 4,
  events: i % 2 === 0 ? [] : [{
    name: "exception",
    timeUnixNano: "1764684000000000999",
    attributes: [{ key: "exception.message", value: { stringValue: long } }],
    droppedAttributesCount: 1
  }],
  droppedEventsCount: i % 3,
  status: i % 4 === 1 ? { code: 2, message: "boom ✗" } : { code: 1 },
  links: i % 2 === 0 ? [] : [{
    traceId: hex(32, i + 5),
    spanId: hex(16, i + 6),
    attributes: [{ key: "l", value: { stringValue: "v" } }],
    droppedAttributesCount: 0
  }],
  droppedLinksCount: i % 2
})

const data = (spans: number): OtlpTracer.TraceData => ({
  resourceSpans: [{
    resource: {
      attributes: [{ key: "service.name", value: { stringValue: "vdb" } }, {
        key: "telemetry.sdk.name",
        value: { stringValue: "effect" }
      }],
      droppedAttributesCount: 0
    },
    scopeSpans: [{
      scope: { name: "effect", version: "4.1.0" },
      spans: Array.from({ length: spans }, (_, i) => span(i))
    }]
  }]
})

describe("OTLP traces protobuf", () => {
  it("writes the bytes Effect's encoder writes, for one span and for a batch whose lengths need several bytes", () => {
    for (const n of [0, 1, 2, 7, 300]) expect(encodeTraces(data(n)), `${n} spans`).toEqual(effectEncoded(data(n)))
  })

  it("is the traces serialisation of its layer, protobuf's content type", () => {
    const body = Effect.runSync(
      Effect.provide(OtlpSerialization.OtlpSerialization.useSync((s) => s.traces(data(3))), layerTraceProtobuf)
    ) as unknown as { readonly body: Uint8Array; readonly contentType: string }
    expect(body.contentType).toBe("application/x-protobuf")
    expect(body.body).toEqual(effectEncoded(data(3)))
  })
})
