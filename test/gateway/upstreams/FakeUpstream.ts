import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse
} from "node:http"
import type { AddressInfo } from "node:net"
import { anthropicMessage, anthropicStream, countTokens } from "./anthropic.ts"
import { chatCompletion, chatStream, response as responsesResponse, responsesStream } from "./openai.ts"

/** One request as the provider received it: exact bytes and headers. */
export interface Received {
  readonly method: string
  readonly url: string
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
}

/** Overrides the wire-format answer for the next requests. */
export type Responder = (request: Received, res: ServerResponse) => void

/**
 * A local stand-in for OpenAI and Anthropic (and every OpenAI-compatible
 * provider): answers in their wire formats, JSON or SSE, and records what it
 * received.
 */
export interface FakeUpstream {
  readonly url: string
  readonly received: Array<Received>
  /** Answer the next requests with `responder` until `reset`. */
  respondWith(responder: Responder): void
  reset(): void
  close(): Promise<void>
}

const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const text = JSON.stringify(body)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers })
  res.end(text)
}

const sendSse = (res: ServerResponse, frames: ReadonlyArray<string>) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  for (const frame of frames) res.write(frame)
  res.end()
}

const defaultResponder: Responder = (request, res) => {
  let parsed: { model?: string; stream?: boolean } = {}
  try {
    parsed = JSON.parse(request.body.toString("utf8"))
  } catch {
    // not JSON: answer anyway
  }
  const model = parsed.model ?? "unknown"
  const path = request.url.split("?")[0]!
  if (path.endsWith("/chat/completions")) {
    return parsed.stream ? sendSse(res, chatStream(model)) : sendJson(res, 200, chatCompletion(model))
  }
  if (path.endsWith("/responses")) {
    return parsed.stream ? sendSse(res, responsesStream(model)) : sendJson(res, 200, responsesResponse(model))
  }
  if (path.endsWith("/messages/count_tokens")) return sendJson(res, 200, countTokens())
  if (path.endsWith("/messages")) {
    return parsed.stream ? sendSse(res, anthropicStream(model)) : sendJson(res, 200, anthropicMessage(model))
  }
  sendJson(res, 404, { error: { message: "not found", type: "invalid_request_error", code: "not_found" } })
}

export const startFakeUpstream = async (): Promise<FakeUpstream> => {
  const received: Array<Received> = []
  let responder: Responder = defaultResponder
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const request: Received = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks)
      }
      received.push(request)
      responder(request, res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    respondWith: (next) => {
      responder = next
    },
    reset: () => {
      responder = defaultResponder
      received.length = 0
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
