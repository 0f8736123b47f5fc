import { request as httpRequest } from "node:http"
import { brotliDecompressSync, gunzipSync, gzipSync } from "node:zlib"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { MIN_COMPRESS_BYTES, negotiate } from "../../src/http/Compression.ts"
import { type Gateway, ORG, SERVICE_KEY, startGateway } from "./harness.ts"
import { send } from "./http.ts"

let gateway: Gateway
beforeAll(async () => {
  gateway = await startGateway()
})
afterAll(() => gateway.close())
beforeEach(() => gateway.upstream.reset())

const chatUrl = () => `${gateway.url}/openai/${ORG}/v1/chat/completions`
const auth = { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" }
const chat = JSON.stringify({ model: "gpt-4.1", messages: [{ role: "user", content: "hi" }] })

/** A completion well above the compression threshold, as exact bytes. */
const large = Buffer.from(JSON.stringify({
  id: "chatcmpl-1",
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content: "All work and no play. ".repeat(200) } }]
}))

const answerLarge = (extra: Record<string, string> = {}, body: Buffer = large) =>
  gateway.upstream.respondWith((_request, res) => {
    res.writeHead(200, { "content-type": "application/json", "content-length": body.length, ...extra })
    res.end(body)
  })

describe("compression towards the client", () => {
  it("gzips a non-streaming response when the client accepts gzip, with a correct content-length", async () => {
    answerLarge()
    const reply = await send(chatUrl(), { headers: { ...auth, "accept-encoding": "gzip" }, body: chat })
    expect(reply.status).toBe(200)
    expect(reply.headers["content-encoding"]).toBe("gzip")
    expect(reply.headers["vary"]).toBe("accept-encoding")
    expect(Number(reply.headers["content-length"])).toBe(reply.body.length)
    expect(reply.body.length).toBeLessThan(large.length)
    expect(gunzipSync(reply.body).equals(large)).toBe(true)
    expect(reply.headers["x-gateway-firewall-decision"]).toBe("allow")
    // The gateway negotiates compression itself: the provider never sees the client's Accept-Encoding.
    expect(gateway.upstream.received[0]!.headers["accept-encoding"]).toBeUndefined()
  })

  it("uses br when the client accepts br", async () => {
    answerLarge()
    const reply = await send(chatUrl(), { headers: { ...auth, "accept-encoding": "br" }, body: chat })
    expect(reply.headers["content-encoding"]).toBe("br")
    expect(Number(reply.headers["content-length"])).toBe(reply.body.length)
    expect(brotliDecompressSync(reply.body).equals(large)).toBe(true)
  })

  it("compresses a large body (off the event loop) to the same bytes", async () => {
    const big = Buffer.from(JSON.stringify({ object: "chat.completion", text: "lorem ipsum dolor ".repeat(12_000) }))
    answerLarge({}, big)
    const reply = await send(chatUrl(), { headers: { ...auth, "accept-encoding": "gzip" }, body: chat })
    expect(reply.headers["content-encoding"]).toBe("gzip")
    expect(Number(reply.headers["content-length"])).toBe(reply.body.length)
    expect(gunzipSync(reply.body).equals(big)).toBe(true)
  })

  it("honours q-values: the preferred coding wins, q=0 refuses", async () => {
    answerLarge()
    const preferGzip = await send(chatUrl(), { headers: { ...auth, "accept-encoding": "br;q=0.5, gzip" }, body: chat })
    expect(preferGzip.headers["content-encoding"]).toBe("gzip")
    const refused = await send(chatUrl(), { headers: { ...auth, "accept-encoding": "gzip;q=0, br;q=0" }, body: chat })
    expect(refused.headers["content-encoding"]).toBeUndefined()
    expect(refused.body.equals(large)).toBe(true)
  })

  it("sends the exact bytes without Accept-Encoding, still marking the variant", async () => {
    answerLarge()
    const reply = await send(chatUrl(), { headers: auth, body: chat })
    expect(reply.headers["content-encoding"]).toBeUndefined()
    expect(reply.headers["vary"]).toBe("accept-encoding")
    expect(reply.body.equals(large)).toBe(true)
    expect(Number(reply.headers["content-length"])).toBe(large.length)
  })

  it("leaves a small body and an already-encoded body as they are", async () => {
    const small = await send(chatUrl(), { headers: { ...auth, "accept-encoding": "gzip" }, body: chat })
    expect(small.status).toBe(200)
    expect(small.body.length).toBeLessThan(MIN_COMPRESS_BYTES)
    expect(small.headers["content-encoding"]).toBeUndefined()
    expect(() => small.json()).not.toThrow()

    const encoded = gzipSync(large)
    answerLarge({ "content-encoding": "gzip" }, encoded)
    const reply = await send(chatUrl(), { headers: { ...auth, "accept-encoding": "gzip, br" }, body: chat })
    expect(reply.headers["content-encoding"]).toBe("gzip")
    expect(reply.body.equals(encoded)).toBe(true)
  })

  it("never buffers or compresses a streamed response", async () => {
    const frames = [`data: ${JSON.stringify({ a: "x".repeat(2000) })}\n\n`, "data: [DONE]\n\n"]
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    gateway.upstream.respondWith((_request, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write(frames[0])
      void gate.then(() => res.end(frames[1]))
    })
    const received: Array<Buffer> = []
    const { headers } = await new Promise<{ headers: Record<string, unknown> }>((resolve, reject) => {
      const req = httpRequest(
        chatUrl(),
        { method: "POST", headers: { ...auth, "accept-encoding": "gzip, br" } },
        (res) => {
          res.on("data", (chunk: Buffer) => {
            received.push(chunk)
            if (received.length === 1) release() // the first frame arrived while the upstream still holds the rest
          })
          res.on("end", () => resolve({ headers: res.headers }))
          res.on("error", reject)
        }
      )
      req.end(JSON.stringify({ model: "gpt-4.1", stream: true, messages: [] }))
    })
    expect(headers["content-encoding"]).toBeUndefined()
    expect(headers["content-type"]).toBe("text/event-stream")
    expect(Buffer.concat(received).toString("utf8")).toBe(frames.join(""))
  })

  it("compresses the model listing too", async () => {
    const reply = await send(`${gateway.url}/openai/${ORG}/v1/models`, {
      method: "GET",
      headers: { authorization: `Bearer ${SERVICE_KEY}`, "accept-encoding": "gzip" }
    })
    expect(reply.status).toBe(200)
    const body = reply.headers["content-encoding"] === "gzip" ? gunzipSync(reply.body) : reply.body
    expect(JSON.parse(body.toString("utf8")).object).toBe("list")
    expect(Number(reply.headers["content-length"])).toBe(reply.body.length)
  })
})

describe("negotiate", () => {
  it.each(
    [
      [undefined, undefined],
      ["", undefined],
      ["identity", undefined],
      ["gzip", "gzip"],
      ["x-gzip", "gzip"],
      ["br", "br"],
      ["gzip, deflate, br", "br"],
      ["GZIP;q=1, br;q=0.9", "gzip"],
      ["*", "br"],
      ["*;q=0.1, gzip;q=0.5", "gzip"],
      ["br;q=0, *", "gzip"],
      ["gzip;q=0", undefined],
      ["deflate", undefined]
    ] as const
  )("%s -> %s", (header, coding) => {
    expect(negotiate(header)).toBe(coding)
  })
})
