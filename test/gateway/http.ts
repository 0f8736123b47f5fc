import { type IncomingHttpHeaders, request as httpRequest } from "node:http"
import type { FakeUpstream } from "./upstreams/FakeUpstream.ts"

export interface Reply {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
  readonly json: () => any
}

/** A raw HTTP/1.1 request with exactly the given headers and bytes. */
export const send = (
  url: string,
  options: {
    readonly method?: string
    readonly headers?: Record<string, string | Array<string>>
    readonly body?: string | Buffer
  } = {}
): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? "POST", headers: options.headers }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => {
        const body = Buffer.concat(chunks)
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body,
          json: () => JSON.parse(body.toString("utf8"))
        })
      })
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end(options.body)
  })

/**
 * The upstream answers a stream's first frame and never ends it; the client reads that frame and
 * disconnects. Resolves once the upstream saw its request closed (the gateway aborted it).
 */
export const disconnectMidStream = async (
  upstream: Pick<FakeUpstream, "respondWith">,
  url: string,
  headers: Record<string, string>
): Promise<void> => {
  let upstreamClosed!: () => void
  const closed = new Promise<void>((resolve) => (upstreamClosed = resolve))
  upstream.respondWith((_request, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" })
    res.write("data: first\n\n")
    res.on("close", () => upstreamClosed())
  })
  await new Promise<void>((resolve) => {
    const req = httpRequest(url, { method: "POST", headers }, (res) => {
      res.once("data", () => {
        req.destroy()
        resolve()
      })
    })
    req.end(JSON.stringify({ model: "gpt-4.1", stream: true }))
  })
  await closed
}
