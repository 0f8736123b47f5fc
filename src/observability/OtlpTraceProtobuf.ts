import { Layer } from "effect"
import { HttpBody } from "effect/http"
import { OtlpSerialization } from "effect/observability"
import type { OtlpResource, OtlpTracer } from "effect/observability"

/**
 * OTLP/HTTP protobuf for traces, the same bytes as `OtlpSerialization.layerProtobuf` writes
 * (same fields, order and omissions; a test compares them), written into one growing buffer.
 * Effect's encoder builds a `Uint8Array` per field and a `BigInt` per varint and concatenates
 * them at every level: about 115 µs a span on the bench VM against 10 for its JSON, which with
 * 4 spans a sampled gateway request was the largest cost of tracing at 10 % (profiled,
 * docs/operations.md "Sampling and its cost"). Metrics and logs are not exported here and keep Effect's encoder.
 */
type Span = OtlpTracer.TraceData["resourceSpans"][number]["scopeSpans"][number]["spans"][number]
type KeyValue = OtlpResource.KeyValue
type AnyValue = OtlpResource.AnyValue

const textEncoder = new TextEncoder()

class Writer {
  buf = new Uint8Array(4096)
  view = new DataView(this.buf.buffer)
  pos = 0

  ensure(extra: number) {
    if (this.pos + extra <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < this.pos + extra) size *= 2
    const next = new Uint8Array(size)
    next.set(this.buf.subarray(0, this.pos))
    this.buf = next
    this.view = new DataView(next.buffer)
  }

  /** A non-negative integer up to 2^53 as a varint. */
  varint(value: number) {
    this.ensure(10)
    while (value > 127) {
      this.buf[this.pos++] = (value % 128) | 0x80
      value = Math.floor(value / 128)
    }
    this.buf[this.pos++] = value
  }

  /** Any 64-bit integer (a negative one as its two's complement, as protobuf's int64 is written). */
  varint64(value: bigint) {
    let n = BigInt.asUintN(64, value)
    this.ensure(10)
    while (n > 127n) {
      this.buf[this.pos++] = Number(n & 127n) | 0x80
      n >>= 7n
    }
    this.buf[this.pos++] = Number(n)
  }

  tag(field: number, wire: number) {
    this.varint(field * 8 + wire)
  }

  fixed64(field: number, value: bigint) {
    this.tag(field, 1)
    this.ensure(8)
    this.view.setBigUint64(this.pos, BigInt.asUintN(64, value), true)
    this.pos += 8
  }

  fixed32(field: number, value: number) {
    this.tag(field, 5)
    this.ensure(4)
    this.view.setUint32(this.pos, value, true)
    this.pos += 4
  }

  double(field: number, value: number) {
    this.tag(field, 1)
    this.ensure(8)
    this.view.setFloat64(this.pos, value, true)
    this.pos += 8
  }

  /** A length-delimited field whose content `write` appends; the length is moved in front once known. */
  delimited(field: number, write: () => void) {
    this.tag(field, 2)
    this.ensure(1)
    const lengthAt = this.pos++
    const start = this.pos
    write()
    const length = this.pos - start
    if (length < 128) {
      this.buf[lengthAt] = length
      return
    }
    let extra = 0
    for (let n = length; n > 127; n = Math.floor(n / 128)) extra++
    this.ensure(extra)
    this.buf.copyWithin(start + extra, start, this.pos)
    let at = lengthAt
    for (let n = length;; n = Math.floor(n / 128)) {
      if (n < 128) {
        this.buf[at] = n
        break
      }
      this.buf[at++] = (n % 128) | 0x80
    }
    this.pos = start + extra + length
  }

  string(field: number, value: string) {
    this.tag(field, 2)
    let ascii = value.length < 128
    for (let i = 0; ascii && i < value.length; i++) if (value.charCodeAt(i) > 127) ascii = false
    if (ascii) {
      this.ensure(1 + value.length)
      this.buf[this.pos++] = value.length
      for (let i = 0; i < value.length; i++) this.buf[this.pos++] = value.charCodeAt(i)
      return
    }
    const bytes = textEncoder.encode(value)
    this.varint(bytes.length)
    this.bytes(bytes)
  }

  bytes(bytes: Uint8Array) {
    this.ensure(bytes.length)
    this.buf.set(bytes, this.pos)
    this.pos += bytes.length
  }

  /** A hex id (trace or span id) as its bytes, as `parseInt` reads each pair (an invalid pair is 0). */
  hex(field: number, hex: string) {
    const length = hex.length >> 1
    this.tag(field, 2)
    this.varint(length)
    this.ensure(length)
    for (let i = 0; i < length; i++) {
      const high = nibble(hex.charCodeAt(i * 2))
      const low = nibble(hex.charCodeAt(i * 2 + 1))
      if (high >= 0 && low >= 0) this.buf[this.pos++] = high * 16 + low
      else {
        const byte = parseInt(hex.slice(i * 2, i * 2 + 2), 16)
        this.buf[this.pos++] = Number.isNaN(byte) ? 0 : byte
      }
    }
  }
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

const optionalString = (w: Writer, field: number, value: string | undefined) => {
  if (value !== undefined && value !== "") w.string(field, value)
}

const anyValue = (w: Writer, value: AnyValue) => {
  if (value.stringValue !== undefined && value.stringValue !== null) w.string(1, value.stringValue)
  else if (value.boolValue !== undefined && value.boolValue !== null) {
    w.tag(2, 0)
    w.varint(value.boolValue ? 1 : 0)
  } else if (value.intValue !== undefined && value.intValue !== null) {
    w.tag(3, 0)
    const int = value.intValue
    if (typeof int === "number" && Number.isSafeInteger(int) && int >= 0) w.varint(int)
    else w.varint64(BigInt(int))
  } else if (value.doubleValue !== undefined && value.doubleValue !== null) w.double(4, value.doubleValue)
  else if (value.arrayValue !== undefined) {
    const values = value.arrayValue.values
    w.delimited(5, () => {
      for (const item of values) w.delimited(1, () => anyValue(w, item))
    })
  } else if (value.kvlistValue !== undefined) {
    const values = value.kvlistValue.values
    w.delimited(6, () => keyValues(w, 1, values))
  } else if (value.bytesValue !== undefined) {
    w.tag(7, 2)
    w.varint(value.bytesValue.length)
    w.bytes(value.bytesValue)
  }
}

const keyValues = (w: Writer, field: number, values: ReadonlyArray<KeyValue>) => {
  for (const kv of values) {
    w.delimited(field, () => {
      w.string(1, kv.key)
      w.delimited(2, () => anyValue(w, kv.value))
    })
  }
}

const count = (w: Writer, field: number, value: number) => {
  if (value > 0) {
    w.tag(field, 0)
    w.varint(value)
  }
}

const span = (w: Writer, s: Span) => {
  w.hex(1, s.traceId)
  w.hex(2, s.spanId)
  optionalString(w, 3, (s as { readonly traceState?: string }).traceState)
  if (s.parentSpanId !== undefined) w.hex(4, s.parentSpanId)
  w.string(5, s.name)
  w.tag(6, 0)
  w.varint(s.kind)
  w.fixed64(7, BigInt(s.startTimeUnixNano))
  w.fixed64(8, BigInt(s.endTimeUnixNano))
  keyValues(w, 9, s.attributes)
  count(w, 10, s.droppedAttributesCount)
  for (const event of s.events) {
    w.delimited(11, () => {
      w.fixed64(1, BigInt(event.timeUnixNano))
      w.string(2, event.name)
      keyValues(w, 3, event.attributes)
      count(w, 4, event.droppedAttributesCount)
    })
  }
  count(w, 12, s.droppedEventsCount)
  for (const link of s.links) {
    const extra = link as { readonly traceState?: string; readonly flags?: number }
    w.delimited(13, () => {
      w.hex(1, link.traceId)
      w.hex(2, link.spanId)
      optionalString(w, 3, extra.traceState)
      keyValues(w, 4, link.attributes)
      count(w, 5, link.droppedAttributesCount)
      if (extra.flags !== undefined) w.fixed32(6, extra.flags)
    })
  }
  count(w, 14, s.droppedLinksCount)
  w.delimited(15, () => {
    optionalString(w, 2, s.status.message)
    w.tag(3, 0)
    w.varint(s.status.code)
  })
  const flags = (s as { readonly flags?: number }).flags
  if (flags !== undefined) w.fixed32(16, flags)
}

/** `TracesData` as protobuf bytes. */
export const encodeTraces = (data: OtlpTracer.TraceData): Uint8Array => {
  const w = new Writer()
  for (const resourceSpans of data.resourceSpans) {
    w.delimited(1, () => {
      w.delimited(1, () => {
        keyValues(w, 1, resourceSpans.resource.attributes)
        count(w, 2, resourceSpans.resource.droppedAttributesCount)
      })
      for (const scopeSpans of resourceSpans.scopeSpans) {
        w.delimited(2, () => {
          const scope = scopeSpans.scope as {
            readonly name: string
            readonly version?: string
            readonly attributes?: ReadonlyArray<KeyValue>
            readonly droppedAttributesCount?: number
          }
          w.delimited(1, () => {
            w.string(1, scope.name)
            optionalString(w, 2, scope.version)
            if (scope.attributes) keyValues(w, 3, scope.attributes)
            if (scope.droppedAttributesCount) count(w, 4, scope.droppedAttributesCount)
          })
          for (const s of scopeSpans.spans) w.delimited(2, () => span(w, s))
          optionalString(w, 3, scopeSpans.schemaUrl)
        })
      }
      optionalString(w, 3, resourceSpans.schemaUrl)
    })
  }
  return w.buf.slice(0, w.pos)
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
