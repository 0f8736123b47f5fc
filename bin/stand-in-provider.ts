/**
 * A stand-in LLM provider for trying the gateway without a provider account:
 * it speaks just enough of the OpenAI chat-completions and Anthropic messages
 * wire formats (JSON and SSE) to answer any client, and says what it received
 * (sizes only, never the text). Loopback only.
 *
 *   bin/stand-in-provider [--port 9000]
 *   VDB_PROVIDER_OPENAI_BASE_URL=http://127.0.0.1:9000/v1 \
 *   VDB_PROVIDER_ANTHROPIC_BASE_URL=http://127.0.0.1:9000 make start
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"

const USAGE = `usage: bin/stand-in-provider [--port PORT]   (default 9000; loopback only)
A stand-in OpenAI chat-completions and Anthropic messages provider for trying the gateway:
  VDB_PROVIDER_OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 VDB_PROVIDER_ANTHROPIC_BASE_URL=http://127.0.0.1:PORT make start`
const args = process.argv.slice(2)
if (args.includes("--help") || args.includes("-h")) {
  console.log(USAGE)
  process.exit(0)
}
const portFlag = args.indexOf("--port")
const port = portFlag >= 0 ? Number(args[portFlag + 1]) : 9000
const unknown = args.filter((arg, i) => arg !== "--port" && (portFlag < 0 || i !== portFlag + 1))
if (unknown.length > 0 || !Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(
    `stand-in-provider: ${
      unknown.length > 0 ? `unknown argument ${JSON.stringify(unknown[0])}` : "--port must be 1..65535"
    }\n${USAGE}`
  )
  process.exit(2)
}

const readJson = async (req: IncomingMessage): Promise<Record<string, unknown>> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>
  } catch {
    return {}
  }
}

const reply = "Hello from the stand-in provider."

const sse = (res: ServerResponse, frames: ReadonlyArray<string>) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  for (const frame of frames) res.write(frame)
  res.end()
}

const chat = (res: ServerResponse, body: Record<string, unknown>) => {
  const model = String(body.model ?? "unknown")
  const base = { id: "chatcmpl-stand-in", created: Math.floor(Date.now() / 1000), model }
  if (body.stream === true) {
    const chunk = (delta: object, finish: string | null) =>
      `data: ${
        JSON.stringify({
          ...base,
          object: "chat.completion.chunk",
          choices: [{ index: 0, delta, finish_reason: finish }]
        })
      }\n\n`
    return sse(res, [chunk({ role: "assistant", content: reply }, null), chunk({}, "stop"), "data: [DONE]\n\n"])
  }
  res.writeHead(200, { "content-type": "application/json" })
  res.end(JSON.stringify({
    ...base,
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content: reply }, finish_reason: "stop" }],
    usage: { prompt_tokens: 1, completion_tokens: 7, total_tokens: 8 }
  }))
}

const messages = (res: ServerResponse, body: Record<string, unknown>) => {
  const model = String(body.model ?? "unknown")
  const message = {
    id: "msg_stand_in",
    type: "message",
    role: "assistant",
    model,
    content: [{ type: "text", text: reply }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 7 }
  }
  if (body.stream === true) {
    const frame = (event: string, data: object) =>
      `event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`
    return sse(res, [
      frame("message_start", { message: { ...message, content: [], stop_reason: null } }),
      frame("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
      frame("content_block_delta", { index: 0, delta: { type: "text_delta", text: reply } }),
      frame("content_block_stop", { index: 0 }),
      frame("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 7 } }),
      frame("message_stop", {})
    ])
  }
  res.writeHead(200, { "content-type": "application/json" })
  res.end(JSON.stringify(message))
}

const server = createServer(async (req, res) => {
  const path = (req.url ?? "/").split("?")[0]
  const body = req.method === "POST" ? await readJson(req) : {}
  process.stderr.write(`stand-in: ${req.method} ${path} model=${String(body.model ?? "-")}\n`)
  if (req.method === "POST" && path === "/v1/chat/completions") return chat(res, body)
  if (req.method === "POST" && path === "/v1/messages") return messages(res, body)
  res.writeHead(404, { "content-type": "application/json" })
  res.end(
    JSON.stringify({ error: { message: `the stand-in provider does not serve ${path}`, type: "not_found_error" } })
  )
})

server.listen(port, "127.0.0.1", () => process.stderr.write(`stand-in provider on http://127.0.0.1:${port}\n`))
