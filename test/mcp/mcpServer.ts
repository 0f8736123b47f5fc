import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { expect } from "vitest"
import type { RunningServer } from "../support/processes.ts"
import { startServerOnOwnDatabase } from "../support/serverCli.ts"

export interface McpServerUnderTest {
  readonly server: RunningServer
  /** What `bin/vdb` commands of this test file run with (the same database and master key). */
  readonly env: Record<string, string>
  readonly mcpUrl: string
  /** Stops the server, then drops its database. */
  readonly stop: () => Promise<void>
}

/**
 * `bin/vdb serve mcp` (or `services`) on a throwaway PostgreSQL database of its own, for one test
 * file; `settings` adds to its environment.
 */
export const startMcpServer = async (
  settings: Record<string, string> = {},
  services: ReadonlyArray<string> = ["mcp"]
): Promise<McpServerUnderTest> => {
  const started = await startServerOnOwnDatabase(services, settings)
  return { ...started, mcpUrl: `http://127.0.0.1:${started.server.ports.mcp}/mcp` }
}

/**
 * The official MCP SDK client, connected with an organization's API key. The SDK offers its
 * newest revision; with `protocolVersion` it offers that one instead, as a client pinned to it would.
 */
export const connectSdk = async (mcpUrl: string, apiKey: string, protocolVersion?: string) => {
  const client = new Client({ name: "vdb-test", version: "1.0.0" })
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
    requestInit: { headers: { authorization: apiKey } }
  })
  if (protocolVersion !== undefined) {
    const send = transport.send.bind(transport)
    transport.send = (message, options) => {
      const m = message as { method?: string; params?: { protocolVersion?: string } }
      if (m.method === "initialize" && m.params !== undefined) m.params.protocolVersion = protocolVersion
      return send(message, options)
    }
  }
  await client.connect(transport)
  if (protocolVersion !== undefined) expect(transport.protocolVersion).toBe(protocolVersion)
  return client
}

/** What `callTool` answers, and its text. */
export interface ToolAnswer {
  readonly isError?: boolean
  readonly content?: unknown
  readonly structuredContent?: unknown
}

export const textOf = (answer: ToolAnswer) => (answer.content as Array<{ text: string }>).map((c) => c.text).join("\n")

export const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" }

/** A raw JSON-RPC POST to `/mcp` with an organization's API key. */
export const postMcp = (mcpUrl: string, apiKey: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(mcpUrl, {
    method: "POST",
    headers: { authorization: apiKey, ...MCP_HEADERS, ...headers },
    body: JSON.stringify(body)
  })

/** A raw session on `protocolVersion` (initialize, then initialized): the headers its later requests carry. */
export const openSession = async (mcpUrl: string, apiKey: string, protocolVersion: string, clientName = "vdb-test") => {
  const response = await postMcp(mcpUrl, apiKey, {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion, capabilities: {}, clientInfo: { name: clientName, version: "1" } }
  })
  expect(response.status).toBe(200)
  await response.text()
  const session = { "mcp-session-id": response.headers.get("mcp-session-id")!, "mcp-protocol-version": protocolVersion }
  expect((await postMcp(mcpUrl, apiKey, { jsonrpc: "2.0", method: "notifications/initialized" }, session)).status).toBe(
    202
  )
  return session
}
