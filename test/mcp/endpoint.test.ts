import { Effect } from "effect"
import { McpClient, McpProtocol } from "effect/ai"
import { FetchHttpClient } from "effect/http"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PROMPT_DEFINITIONS } from "../../src/mcp/PromptDefinitions.ts"
import { TOOL_DEFINITIONS } from "../../src/mcp/ToolDefinitions.ts"
import { type RunningServer, runVdb } from "../support/processes.ts"
import { connectSdk, type McpServerUnderTest, startMcpServer } from "./mcpServer.ts"

/**
 * Issue 10: the MCP endpoint of a real `bin/vdb serve` (on a throwaway
 * PostgreSQL database: it starts in a second or two, PGlite takes longer) with the
 * repository's fixtures ingested once, driven by the official MCP SDK client.
 */
const FIXTURES = fileURLToPath(new URL("../fixtures/data", import.meta.url))
const LOG4SHELL = "CVE-2021-44228"

interface Credentials {
  readonly uuid: string
  readonly secret: string
  readonly apiKey: string
}

let server: RunningServer
let env: Record<string, string>
let org: Credentials
let mcpUrl: string

const json = async <A>(args: ReadonlyArray<string>): Promise<A> => {
  const run = await runVdb(args, env)
  expect(run.code, `${args.join(" ")}: ${run.stderr}`).toBe(0)
  return JSON.parse(run.stdout) as A
}

const connect = (apiKey: string, protocolVersion?: string) => connectSdk(mcpUrl, apiKey, protocolVersion)

let running: McpServerUnderTest | undefined

beforeAll(async () => {
  running = await startMcpServer()
  ;({ env, mcpUrl, server } = running)
  org = await json<Credentials>(["org", "create", "--name", "mcp", "--per-minute", "0", "--per-week", "0", "--json"])
  await json(["ingest", "--all", FIXTURES, "--json"])
}, 180_000)

afterAll(async () => {
  await running?.stop()
})

const sampleArgs = (name: string): Record<string, unknown> => {
  switch (name) {
    case "get_source_record":
      return { identifier: LOG4SHELL, source: "mitre", max_chars: 500 }
    case "batch_lookup":
      return { identifiers: [LOG4SHELL, "CVE-2017-0144", "CVE-1999-99999"] }
    case "get_exploit":
      return { identifier: LOG4SHELL, uuid: "missing" }
    case "check_guardrails":
      return { text: "hello world" }
    case "issue_nonces":
      return { count: 2 }
    case "recent_kev_entries":
    case "list_guardrails":
    case "list_policies":
    case "list_inference_log":
    case "get_organization":
    case "get_rate_limit_status":
    case "get_usage":
      return {}
    default:
      return { identifier: LOG4SHELL }
  }
}

describe("MCP endpoint (official SDK client)", () => {
  it("lists 31 tools and 18 prompts, calls every tool, gets every prompt", async () => {
    const client = await connect(org.apiKey)
    const tools = await client.listTools()
    expect(tools.tools.map((t) => t.name).sort()).toEqual(TOOL_DEFINITIONS.map((t) => t.name).sort())
    expect(tools.tools).toHaveLength(31)
    for (const tool of tools.tools) {
      // Typed inputs as plain JSON Schema: an object root, finite numbers (no NaN/Infinity alternatives).
      expect(tool.inputSchema.type, tool.name).toBe("object")
      expect(JSON.stringify(tool.inputSchema), tool.name).not.toMatch(/NaN|Infinity/)
      expect(tool.description, tool.name).toBeTruthy()
    }
    const prompts = await client.listPrompts()
    expect(prompts.prompts).toHaveLength(18)
    expect(prompts.prompts.map((p) => p.name).sort()).toEqual(PROMPT_DEFINITIONS.map((p) => p.name).sort())

    for (const tool of TOOL_DEFINITIONS) {
      const result = await client.callTool({ name: tool.name, arguments: sampleArgs(tool.name) })
      if (tool.name === "get_exploit") {
        expect(result.isError, tool.name).toBe(true)
        continue
      }
      if (process.env.MCP_DUMP === "1") console.log(tool.name, JSON.stringify(result.structuredContent).slice(0, 600))
      expect(result.isError, `${tool.name}: ${JSON.stringify(result.content).slice(0, 300)}`).toBeFalsy()
      expect(result.structuredContent, tool.name).toBeDefined()
    }

    const exploits = await client.callTool({ name: "list_exploits", arguments: { identifier: LOG4SHELL, limit: 1 } })
    const page = (exploits.structuredContent as {
      data: { total: number; items: Array<{ uuid: string }>; nextCursor: string | null }
    }).data
    expect(page.total).toBeGreaterThan(1)
    expect(page.nextCursor).not.toBeNull()
    const detail = await client.callTool({
      name: "get_exploit",
      arguments: { identifier: LOG4SHELL, uuid: page.items[0]!.uuid }
    })
    expect(detail.isError).toBeFalsy()
    const next = await client.callTool({
      name: "list_exploits",
      arguments: { identifier: LOG4SHELL, limit: 1, cursor: page.nextCursor }
    })
    expect((next.structuredContent as { data: { items: Array<{ uuid: string }> } }).data.items[0]!.uuid).not.toBe(
      page.items[0]!.uuid
    )

    const kev = await client.callTool({ name: "get_kev_status", arguments: { identifier: "cve-2021-44228" } })
    expect((kev.structuredContent as { data: { knownExploited: boolean } }).data.knownExploited).toBe(true)

    for (const prompt of PROMPT_DEFINITIONS) {
      const args: Record<string, string> = {}
      for (const [key] of Object.entries(prompt.parameters)) {
        args[key] = key === "identifiers"
          ? `${LOG4SHELL},CVE-2017-0144`
          : key === "identifier"
          ? LOG4SHELL
          : key === "since"
          ? "2020-01-01"
          : "x"
      }
      const got = await client.getPrompt({ name: prompt.name, arguments: args })
      expect(got.messages.length, prompt.name).toBeGreaterThan(0)
    }
    const triage = await client.getPrompt({ name: "triage_vulnerability", arguments: { identifier: LOG4SHELL } })
    expect(JSON.stringify(triage.messages)).toContain("CVSS")

    const templates = await client.listResourceTemplates()
    expect(templates.resourceTemplates.map((t) => t.uriTemplate).sort()).toEqual([
      "vdb://exploits/{identifier}",
      "vdb://vuln/{identifier}"
    ])
    const resource = await client.readResource({ uri: `vdb://vuln/${LOG4SHELL}` })
    expect(JSON.stringify(resource.contents)).toContain(LOG4SHELL)
    const exploitsResource = await client.readResource({ uri: `vdb://exploits/${LOG4SHELL}` })
    expect(JSON.stringify(exploitsResource.contents)).toContain("metasploit")

    // MCP traffic is in the organization's usage log, like API calls.
    const usage = await client.callTool({ name: "get_usage", arguments: {} })
    const rows = (usage.structuredContent as { data: { rows: Array<{ route: string; requests: number }> } }).data.rows
    expect(rows.find((r) => r.route === "/mcp")?.requests ?? 0).toBeGreaterThan(10)
    await client.close()
  }, 120_000)

  it("unknown identifiers and bad arguments are errors an agent can act on", async () => {
    const client = await connect(org.apiKey, "2025-06-18")
    const unknown = await client.callTool({ name: "get_summary", arguments: { identifier: "CVE-1999-99999" } })
    expect(unknown.isError).toBe(true)
    expect(JSON.stringify(unknown.content)).toContain("unknown_identifier")
    // 2025-06-18: bad arguments are the typed JSON-RPC error -32602 (Invalid params)...
    await expect(client.callTool({ name: "get_summary", arguments: { identifier: 42 } })).rejects.toThrow(/-32602/)
    // ...from 2025-11-25 on, a tool error the model can correct (SEP-1303).
    const current = await connect(org.apiKey)
    const bad = await current.callTool({ name: "get_summary", arguments: { identifier: 42 } })
    expect(bad.isError).toBe(true)
    expect(JSON.stringify(bad.content)).toContain("identifier")
    await current.close()
    const malformed = await client.callTool({ name: "get_summary", arguments: { identifier: "not an id!" } })
    expect(JSON.stringify(malformed.content)).toContain("invalid_argument")
    await client.close()
  })

  it("a 2025-06-18 client and a current client share one server", async () => {
    const pinned = await connect(org.apiKey, "2025-06-18")
    const current = await connect(org.apiKey)
    expect(pinned.getServerVersion()?.name).toBe("vdb")
    const [a, b] = await Promise.all([
      pinned.callTool({ name: "get_epss", arguments: { identifier: LOG4SHELL } }),
      current.callTool({ name: "get_epss", arguments: { identifier: LOG4SHELL } })
    ])
    expect(a.structuredContent).toEqual(b.structuredContent)
    await pinned.close()
    await current.close()
  })
})

describe("MCP endpoint (Effect McpClient, 2026-07-28)", () => {
  it("discovers, lists 31 tools and 18 prompts, calls every tool, gets every prompt", async () => {
    const outcome = await Effect.runPromise(Effect.scoped(
      Effect.gen(function*() {
        const client = yield* McpClient.McpClient
        expect(client.protocolVersion).toBe("2026-07-28")
        const tools = yield* client.listTools()
        const prompts = yield* client.listPrompts()
        const failures: Array<string> = []
        for (const tool of tools) {
          const result = yield* client.callTool({ tool, arguments: sampleArgs(tool.name) })
          if (result.isError === true && tool.name !== "get_exploit") failures.push(tool.name)
        }
        let messages = 0
        for (const prompt of prompts) {
          const args: Record<string, string> = {}
          for (const arg of prompt.arguments ?? []) {
            args[arg.name] = arg.name === "identifier"
              ? LOG4SHELL
              : arg.name === "identifiers"
              ? LOG4SHELL
              : "x"
          }
          messages += (yield* client.getPrompt({ prompt, arguments: args })).messages.length
        }
        return { tools: tools.length, prompts: prompts.length, failures, messages }
      }).pipe(
        Effect.provide(McpClient.layerHttp({
          name: "vdb-effect-test",
          version: "1.0.0",
          url: mcpUrl,
          protocol: McpProtocol.v2026_07_28,
          headers: { authorization: org.apiKey }
        })),
        Effect.provide(FetchHttpClient.layer)
      )
    ))
    expect(outcome.tools).toBe(31)
    expect(outcome.prompts).toBe(18)
    expect(outcome.failures).toEqual([])
    expect(outcome.messages).toBeGreaterThanOrEqual(18)
  }, 60_000)
})

describe("MCP endpoint HTTP surface", () => {
  it("401 with a challenge pointing to the discovery document; the document itself", async () => {
    const response = await fetch(mcpUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}"
    })
    expect(response.status).toBe(401)
    const challenge = response.headers.get("www-authenticate") ?? ""
    expect(challenge).toContain("/.well-known/oauth-protected-resource")
    const bad = await fetch(mcpUrl, {
      method: "POST",
      headers: { authorization: `ApiKey ${org.uuid}:${"0".repeat(64)}` },
      body: "{}"
    })
    expect(bad.status).toBe(401)
    const doc = await fetch(`http://127.0.0.1:${server.ports.mcp}/.well-known/oauth-protected-resource`)
    expect(doc.status).toBe(200)
    const body = await doc.json() as { resource: string; mcp_protocol_versions: Array<string> }
    expect(body.resource).toBe(mcpUrl)
    expect(body.mcp_protocol_versions).toContain("2026-07-28")
    expect((await fetch(`http://127.0.0.1:${server.ports.mcp}/health`)).status).toBe(200)
  })

  it("a client offering an unknown revision gets the newest session-based one", async () => {
    const response = await fetch(mcpUrl, {
      method: "POST",
      headers: {
        authorization: org.apiKey,
        "content-type": "application/json",
        accept: "application/json, text/event-stream"
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2099-01-01", capabilities: {}, clientInfo: { name: "future", version: "1" } }
      })
    })
    expect(response.status).toBe(200)
    const text = await response.text()
    expect(text).toContain(`"protocolVersion":"2025-11-25"`)
  })

  it("GET /mcp is 405 Allow: POST, DELETE; other paths 404 or 414, all in {error:{code,message}}", async () => {
    const response = await fetch(mcpUrl, { headers: { authorization: org.apiKey } })
    expect(response.status).toBe(405)
    expect(response.headers.get("allow")).toBe("POST, DELETE")
    expect(await response.json()).toEqual({
      error: { code: "method_not_allowed", message: "method GET not allowed: use POST, DELETE" }
    })
    const base = new URL(mcpUrl).origin
    const unknown = await fetch(`${base}/nope`)
    expect(unknown.status).toBe(404)
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe("not_found")
    const post = await fetch(`${base}/health`, { method: "POST" })
    expect(post.status).toBe(405)
    expect(post.headers.get("allow")).toBe("GET, HEAD")
    const long = await fetch(`${base}/${"A".repeat(3000)}`)
    expect(long.status).toBe(414)
    expect(((await long.json()) as { error: { code: string } }).error.code).toBe("uri_too_long")
  })

  it("a body over 1 MiB is refused (413), declared or streamed, and the server answers the next request", async () => {
    const headers = {
      authorization: org.apiKey,
      "content-type": "application/json",
      accept: "application/json, text/event-stream"
    }
    const big = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${"a".repeat(2 * 1024 * 1024)}"}}`
    const declared = await fetch(mcpUrl, { method: "POST", headers, body: big })
    expect(declared.status).toBe(413)
    expect(((await declared.json()) as { error: { code: string } }).error.code).toBe("payload_too_large")
    // No content-length: the body is streamed (chunked) and reading stops at the cap.
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(big))
        controller.close()
      }
    })
    const streamed = await fetch(mcpUrl, { method: "POST", headers, body: chunks, duplex: "half" } as RequestInit)
    expect(streamed.status).toBe(413)
    const ok = await fetch(mcpUrl, { headers: { authorization: org.apiKey } })
    expect(ok.status).toBe(405)
  })

  it("rate limit: 429 once the organization's per-minute limit is used; inactive: 403", async () => {
    const limited = await json<Credentials>([
      "org",
      "create",
      "--name",
      "mcp-limited",
      "--per-minute",
      "2",
      "--per-week",
      "0",
      "--json"
    ])
    const client = await connect(limited.apiKey) // initialize and initialized: two requests
    await expect(client.listTools()).rejects.toThrow(/429|rate limit/i)
    await client.close().catch(() => undefined)
    const refused = await fetch(mcpUrl, {
      method: "POST",
      headers: { authorization: limited.apiKey, "content-type": "application/json" },
      body: "{}"
    })
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)

    const inactive = await json<Credentials>([
      "org",
      "create",
      "--name",
      "mcp-inactive",
      "--per-minute",
      "0",
      "--per-week",
      "0",
      "--json"
    ])
    expect((await runVdb(["org", "deactivate", inactive.uuid], env)).code).toBe(0)
    const response = await fetch(mcpUrl, {
      method: "POST",
      headers: { authorization: inactive.apiKey, "content-type": "application/json" },
      body: "{}"
    })
    expect(response.status).toBe(403)
  })
})
