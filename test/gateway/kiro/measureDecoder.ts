/**
 * The side decoder's cost against a plain relay (issue 12: use the SDK's
 * codec unless it costs more than 5 % of relay throughput). Not a test:
 * `node test/gateway/kiro/measureDecoder.ts`. Two measurements:
 * 1. in process: the byte counter the other surfaces use against the event
 *    stream tap, over the same chunks (the pure CPU overhead, the worst case);
 * 2. end to end on loopback: a client reading a Kiro stream through the
 *    gateway with the inference log off (no decoder) and on (decoder).
 */
import { Effect, Redacted } from "effect"
import { request } from "node:http"
import { Readable, Writable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { tapEventStream } from "../../../src/gateway/kiro/EventStreamTap.ts"
import { countBytes } from "../../../src/gateway/relay/ByteCounter.ts"
import { codecDecode, eventFrame } from "./frames.ts"
import { ORG, REFRESH_TOKEN, SERVICE_KEY, startKiroGateway } from "./harness.ts"

/** A long answer: one short text event per token, a tool call, metering now and then. */
const frames: Array<Uint8Array> = []
for (let i = 0; i < 20_000; i++) {
  frames.push(eventFrame("assistantResponseEvent", { content: `token ${i} of a fairly ordinary answer` }))
  if (i % 500 === 0) {
    frames.push(eventFrame("toolUseEvent", { name: "readFile", toolUseId: `t${i}`, input: "{\"path\":\"src/a.ts\"}" }))
  }
  if (i % 1000 === 0) frames.push(eventFrame("meteringEvent", { unit: "credit", unitPlural: "credits", usage: 0.01 }))
}
const stream = Buffer.concat(frames.map((f) => Buffer.from(f)))

const chunked = (size: number) => {
  const out: Array<Buffer> = []
  for (let at = 0; at < stream.length; at += size) out.push(stream.subarray(at, at + size))
  return out
}

const sink = () =>
  new Writable({
    write(_chunk, _encoding, callback) {
      callback()
    }
  })

type Variant = "plain" | "reader" | "codec"

const inProcess = async (variant: Variant, chunks: ReadonlyArray<Buffer>) => {
  const started = performance.now()
  const source = Readable.from(chunks, { objectMode: false })
  const relayed = variant === "plain"
    ? countBytes(source, () => {})
    : tapEventStream(source, () => {}, variant === "codec" ? codecDecode : undefined)
  await pipeline(relayed, sink())
  return performance.now() - started
}

const median = (values: Array<number>) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const mb = stream.length / 1024 / 1024
console.log(
  `stream: ${frames.length} frames, ${mb.toFixed(1)} MiB (${(stream.length / frames.length).toFixed(0)} bytes a frame)`
)

for (const size of [1024, 16 * 1024]) {
  const chunks = chunked(size)
  const variants: Array<Variant> = ["plain", "reader", "codec"]
  const times: Record<Variant, Array<number>> = { plain: [], reader: [], codec: [] }
  for (let round = 0; round < 13; round++) {
    for (const variant of variants) {
      const ms = await inProcess(variant, chunks)
      if (round >= 3) times[variant].push(ms)
    }
  }
  const plain = median(times.plain)
  const cost = (variant: Variant) => {
    const ms = median(times[variant])
    return `${variant} ${(mb / ms * 1000).toFixed(0)} MiB/s (${
      ((ms - plain) / frames.length * 1000).toFixed(2)
    } µs a frame)`
  }
  console.log(
    `in process, ${size / 1024} KiB chunks: plain ${(mb / plain * 1000).toFixed(0)} MiB/s; ${cost("reader")}; ${
      cost("codec")
    }`
  )
}

// End to end: a client reads the stream through the gateway; the decoder runs only when the inference log is on.
const gateway = await startKiroGateway()
await Effect.runPromise(
  gateway.vault.set(ORG, "kiro", Redacted.make(JSON.stringify({ refreshToken: REFRESH_TOKEN, authMethod: "social" })))
)

const throughGateway = () =>
  new Promise<number>((resolve, reject) => {
    const started = performance.now()
    const req = request(`${gateway.url}/kiro/${ORG}/v1/generateAssistantResponse`, {
      method: "POST",
      headers: { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" }
    }, (res) => {
      let bytes = 0
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length
      })
      res.on("end", () =>
        bytes === stream.length ? resolve(performance.now() - started) : reject(new Error(`got ${bytes} bytes`)))
    })
    req.on("error", reject)
    req.end(JSON.stringify({ conversationState: { currentMessage: { userInputMessage: { content: "hi" } } } }))
  })

// Kiro flushes each event as the model produces it: one frame per write is the realistic shape.
for (
  const [shape, pieces] of [["16 KiB writes", chunked(16 * 1024)], [
    "one frame a write",
    frames.map((f) => Buffer.from(f))
  ]] as const
) {
  gateway.kiro.bulk = pieces
  const e2e = { plain: [] as Array<number>, tap: [] as Array<number> }
  for (let round = 0; round < 21; round++) {
    await Effect.runPromise(gateway.inferenceLog.setEnabled(ORG, false))
    const plain = await throughGateway()
    await Effect.runPromise(gateway.inferenceLog.setEnabled(ORG, true))
    const tap = await throughGateway()
    if (round >= 3) {
      e2e.plain.push(plain)
      e2e.tap.push(tap)
    }
  }
  const plain = median(e2e.plain)
  const tap = median(e2e.tap)
  console.log(
    `end to end, ${shape}: log off ${(mb / plain * 1000).toFixed(1)} MiB/s (${
      (plain / frames.length * 1000).toFixed(2)
    } µs a frame), ` +
      `log on (decoder) ${(mb / tap * 1000).toFixed(1)} MiB/s: throughput ${
        ((1 - plain / tap) * 100).toFixed(1)
      } % lower`
  )
}
const [entry] = await Effect.runPromise(gateway.inferenceLog.recent(ORG, 1))
console.log("last log entry's stream summary:", JSON.stringify(entry?.stream))
await gateway.close()
