import { Layer } from "effect"
import { HttpBody } from "effect/http"
import { OtlpSerialization } from "effect/observability"
import type { OtlpResource, OtlpTracer } from "effect/observability"
// protobufjs is CommonJS whose exports Node's ESM loader cannot name statically: a default import.
import protobuf from "protobufjs/minimal.js"

/**
 * OTLP/HTTP protobuf for traces, the same bytes as `OtlpSerialization.layerProtobuf` writes
 * (same fields, order and omissions; a test compares them). The wire format (varints, fixed64,
 * strings, bytes, doubles, length-delimited nesting) is protobufjs's `Writer`, which writes into
 * one growing buffer; this module keeps only OTLP's message layout. Effect's encoder builds a
 * `Uint8Array` per field and a `BigInt` per varint and concatenates them at every level: about
 * 115 µs a span on the bench VM against 10 for its JSON, which with 4 spans a sampled gateway
 * request was the largest cost of tracing at 10 % (profiled, docs/operations.md "Sampling and
 * its cost"). Metrics and logs are not exported here and keep Effect's encoder.
 */
type Span = OtlpTracer.TraceData["resourceSpans"][number]["scopeSpans"][number]["spans"][number]
type KeyValue = OtlpResource.KeyValue
type AnyValue = OtlpResource.AnyValue
type Writer = protobuf.Writer

const VARINT = 0
const FIXED64 = 1
const DELIMITED = 2
const FIXED32 = 5

const tag = (w: Writer, field: number, wire: number): Writer => w.uint32(field * 8 + wire)

/** A length-delimited field whose content `write` appends. */
const delimited = (w: Writer, field: number, write: () => void) => {
  tag(w, field, DELIMITED).fork()
  write()
  w.ldelim()
}

/**
 * A 64-bit integer as protobufjs takes one: a number when exact, else its two 32-bit halves
 * (the nanosecond timestamps are past 2^53). `BigInt` reads it as Effect's encoder does; the
 * halves are several times cheaper than handing protobufjs the decimal string (long.js parses it).
 */
const int64 = (value: number | string | bigint): number | protobuf.Long => {
  if (typeof value === "number" && Number.isSafeInteger(value)) return value
  const n = BigInt.asUintN(64, BigInt(value))
  return { low: Number(n & 0xffffffffn), high: Number(n >> 32n), unsigned: true }
}

// Reused scratch for the ids (trace 16 bytes, span 8): `Writer.bytes` copies them.
const id8 = new Uint8Array(8)
const id16 = new Uint8Array(16)

/** A hex id (trace or span id) as its bytes, as Effect's `parseInt` reads each pair (an invalid pair is 0). */
const hexBytes = (w: Writer, field: number, hex: string) => {
  const length = hex.length >> 1
  const bytes = length === 16 ? id16 : length === 8 ? id8 : new Uint8Array(length)
  for (let i = 0; i < length; i++) {
    const high = nibble(hex.charCodeAt(i * 2))
    const low = nibble(hex.charCodeAt(i * 2 + 1))
    if (high >= 0 && low >= 0) bytes[i] = high * 16 + low
    else {
      const byte = parseInt(hex.slice(i * 2, i * 2 + 2), 16)
      bytes[i] = Number.isNaN(byte) ? 0 : byte
    }
  }
  tag(w, field, DELIMITED).bytes(bytes)
}

/** A hex digit's value, or -1. */
const nibble = (code: number): number =>
  code >= 48 && code <= 57
    ? code - 48
    : code >= 97 && code <= 102
    ? code - 87
    : code >= 65 && code <= 70
    ? code - 55
    : -1

const string = (w: Writer, field: number, value: string) => {
  tag(w, field, DELIMITED).string(value)
}

const optionalString = (w: Writer, field: number, value: string | undefined) => {
  if (value !== undefined && value !== "") string(w, field, value)
}

const anyValue = (w: Writer, value: AnyValue) => {
  if (value.stringValue !== undefined && value.stringValue !== null) string(w, 1, value.stringValue)
  else if (value.boolValue !== undefined && value.boolValue !== null) tag(w, 2, VARINT).bool(value.boolValue)
  else if (value.intValue !== undefined && value.intValue !== null) tag(w, 3, VARINT).int64(int64(value.intValue))
  else if (value.doubleValue !== undefined && value.doubleValue !== null) {
    tag(w, 4, FIXED64).double(value.doubleValue)
  } else if (value.arrayValue !== undefined) {
    const values = value.arrayValue.values
    delimited(w, 5, () => {
      for (const item of values) delimited(w, 1, () => anyValue(w, item))
    })
  } else if (value.kvlistValue !== undefined) {
    const values = value.kvlistValue.values
    delimited(w, 6, () => keyValues(w, 1, values))
  } else if (value.bytesValue !== undefined) tag(w, 7, DELIMITED).bytes(value.bytesValue)
}

const keyValues = (w: Writer, field: number, values: ReadonlyArray<KeyValue>) => {
  for (const kv of values) {
    delimited(w, field, () => {
      string(w, 1, kv.key)
      delimited(w, 2, () => anyValue(w, kv.value))
    })
  }
}

const count = (w: Writer, field: number, value: number) => {
  if (value > 0) tag(w, field, VARINT).uint32(value)
}

const span = (w: Writer, s: Span) => {
  hexBytes(w, 1, s.traceId)
  hexBytes(w, 2, s.spanId)
  optionalString(w, 3, (s as { readonly traceState?: string }).traceState)
  if (s.parentSpanId !== undefined) hexBytes(w, 4, s.parentSpanId)
  string(w, 5, s.name)
  tag(w, 6, VARINT).uint32(s.kind)
  tag(w, 7, FIXED64).fixed64(int64(s.startTimeUnixNano))
  tag(w, 8, FIXED64).fixed64(int64(s.endTimeUnixNano))
  keyValues(w, 9, s.attributes)
  count(w, 10, s.droppedAttributesCount)
  for (const event of s.events) {
    delimited(w, 11, () => {
      tag(w, 1, FIXED64).fixed64(int64(event.timeUnixNano))
      string(w, 2, event.name)
      keyValues(w, 3, event.attributes)
      count(w, 4, event.droppedAttributesCount)
    })
  }
  count(w, 12, s.droppedEventsCount)
  for (const link of s.links) {
    const extra = link as { readonly traceState?: string; readonly flags?: number }
    delimited(w, 13, () => {
      hexBytes(w, 1, link.traceId)
      hexBytes(w, 2, link.spanId)
      optionalString(w, 3, extra.traceState)
      keyValues(w, 4, link.attributes)
      count(w, 5, link.droppedAttributesCount)
      if (extra.flags !== undefined) tag(w, 6, FIXED32).fixed32(extra.flags)
    })
  }
  count(w, 14, s.droppedLinksCount)
  delimited(w, 15, () => {
    optionalString(w, 2, s.status.message)
    tag(w, 3, VARINT).uint32(s.status.code)
  })
  const flags = (s as { readonly flags?: number }).flags
  if (flags !== undefined) tag(w, 16, FIXED32).fixed32(flags)
}

/** `TracesData` as protobuf bytes. */
export const encodeTraces = (data: OtlpTracer.TraceData): Uint8Array => {
  const w = protobuf.Writer.create()
  for (const resourceSpans of data.resourceSpans) {
    delimited(w, 1, () => {
      delimited(w, 1, () => {
        keyValues(w, 1, resourceSpans.resource.attributes)
        count(w, 2, resourceSpans.resource.droppedAttributesCount)
      })
      for (const scopeSpans of resourceSpans.scopeSpans) {
        delimited(w, 2, () => {
          const scope = scopeSpans.scope as {
            readonly name: string
            readonly version?: string
            readonly attributes?: ReadonlyArray<KeyValue>
            readonly droppedAttributesCount?: number
          }
          delimited(w, 1, () => {
            string(w, 1, scope.name)
            optionalString(w, 2, scope.version)
            if (scope.attributes) keyValues(w, 3, scope.attributes)
            if (scope.droppedAttributesCount) count(w, 4, scope.droppedAttributesCount)
          })
          for (const s of scopeSpans.spans) delimited(w, 2, () => span(w, s))
          optionalString(w, 3, scopeSpans.schemaUrl)
        })
      }
      optionalString(w, 3, resourceSpans.schemaUrl)
    })
  }
  // On Node `create()` gives a Buffer writer; the body is handed on as a plain Uint8Array view.
  const bytes = w.finish()
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/** Effect's protobuf serialisation with this encoder for traces. */
export const layerTraceProtobuf: Layer.Layer<OtlpSerialization.OtlpSerialization> = Layer.effect(
  OtlpSerialization.OtlpSerialization
)(
  OtlpSerialization.OtlpSerialization.useSync((effects) => ({
    ...effects,
    traces: (data: OtlpTracer.TraceData) => HttpBody.uint8Array(encodeTraces(data), "application/x-protobuf")
  }))
).pipe(Layer.provide(OtlpSerialization.layerProtobuf))
