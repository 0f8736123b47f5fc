import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { McpError } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { McpClient, McpProtocol } from "effect/ai"
import { FetchHttpClient } from "effect/http"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { TOOL_DEFINITIONS } from "../../src/mcp/ToolDefinitions.ts"
import { truncate } from "../../src/mcp/ToolKit.ts"
import { type RunningServer, runVdb } from "../support/processes.ts"
import { connectSdk, type McpServerUnderTest, startMcpServer, textOf, type ToolAnswer } from "./mcpServer.ts"

/**
 * The MCP tools, prompts and resources at their edges (arguments out of range,
 * pages past the end, refused reads, annotations, completions), on a real
 * `bin/vdb serve` with the fixtures ingested, through the official MCP SDK client.
 */
const FIXTURES = fileURLToPath(new URL("../fixtures/data", import.meta.url))
const LOG4SHELL = "CVE-2021-44228"
// The longest fixture record (mitre, about 35,700 characters of JSON).
const RAPID_RESET = "CVE-2023-44487"

let server: RunningServer
let env: Record<string, string>
let mcpUrl: string
let apiKey: string
let client: Client

let running: McpServerUnderTest | undefined

beforeAll(async () => {
  running = await startMcpServer()
  ;({ env, mcpUrl, server } = running)
  const created = await runVdb([
    "org",
    "create",
    "--name",
    "mcp-edges",
    "--per-minute",
    "0",
    "--per-week",
    "0",
    "--json"
  ], env)
  expect(created.code, created.stderr).toBe(0)
  apiKey = (JSON.parse(created.stdout) as { apiKey: string }).apiKey
  const ingest = await runVdb(["ingest", "--all", FIXTURES, "--json"], env)
  expect(ingest.code, ingest.stderr).toBe(0)
  client = await connectSdk(mcpUrl, apiKey)
}, 180_000)

afterAll(async () => {
  await client?.close()
  await running?.stop()
})

const call = async (name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as ToolAnswer
const dataOf = <A>(answer: ToolAnswer) => (answer.structuredContent as { data: A }).data

/** The JSON-RPC error code a request was refused with. */
const refusal = async (request: Promise<unknown>) => {
  const error = await request.then(() => undefined, (e: unknown) => e)
  expect(error).toBeInstanceOf(McpError)
  return error as McpError
}

describe("MCP tool arguments", () => {
  it("get_usage refuses a since outside the years 1970 to 9999 as invalid_argument, not an internal error", async () => {
    for (const since of ["-005000-01-01", "-271821-04-20", "0000-01-01", "1969-12-31T23:59:59Z", "+010000-01-01"]) {
      const answer = await call("get_usage", { since })
      expect(answer.isError, since).toBe(true)
      expect(textOf(answer), since).toMatch(
        /^invalid_argument: since must be an ISO 8601 date or time in the years 1970 to 9999/
      )
    }
    const ok = await call("get_usage", { since: "1970-01-01" })
    expect(ok.isError).toBeFalsy()
    expect(dataOf<{ since: string }>(ok).since).toBe("1970-01-01T00:00:00.000Z")
  })

  it("get_source_record's marker names the offset after the characters returned", async () => {
    const whole = dataOf<{ json: string; totalChars: number; truncated: boolean }>(
      await call("get_source_record", { identifier: RAPID_RESET, source: "mitre", max_chars: 50_000 })
    )
    expect(whole.truncated).toBe(false)
    expect(whole.totalChars).toBeGreaterThan(30_000)
    // At the minimum of 100 (below it is refused: test/mcp/argumentRanges.test.ts), the next page starts at 100.
    const first = dataOf<{ json: string }>(
      await call("get_source_record", { identifier: RAPID_RESET, source: "mitre", max_chars: 100 })
    )
    expect(first.json.slice(0, 100)).toBe(whole.json.slice(0, 100))
    expect(first.json).toMatch(/\[truncated: \d+ more characters; call again with offset=100\]$/)
    const second = dataOf<{ json: string }>(
      await call("get_source_record", { identifier: RAPID_RESET, source: "mitre", offset: 100, max_chars: 100 })
    )
    expect(second.json.slice(0, 100)).toBe(whole.json.slice(100, 200))
    expect(second.json).toMatch(/call again with offset=200\]$/)
    // The marker is built from the limit applied (no fixture record reaches 50,000 characters).
    expect(truncate("x".repeat(60_000), 50_000, (limit) => `call again with offset=${limit}`).text).toMatch(
      /\[truncated: 10000 more characters; call again with offset=50000\]$/
    )
  })

  it("recent_kev_entries keeps the real total on a page past the end", async () => {
    const first = dataOf<{ total: number; items: Array<unknown> }>(await call("recent_kev_entries", { limit: 5 }))
    expect(first.total).toBeGreaterThan(5)
    expect(first.items).toHaveLength(5)
    const pastEnd = Buffer.from(`o:${first.total + 50}`, "utf8").toString("base64url")
    const beyond = await call("recent_kev_entries", { cursor: pastEnd })
    expect(beyond.isError).toBeFalsy()
    expect(dataOf(beyond)).toEqual({ items: [], total: first.total, nextCursor: null })
    const last = Buffer.from(`o:${first.total - 1}`, "utf8").toString("base64url")
    expect(dataOf<{ items: Array<unknown>; total: number }>(await call("recent_kev_entries", { cursor: last })))
      .toMatchObject({ total: first.total, nextCursor: null })
  })

  it("recent_kev_entries refuses a since that is not a calendar date", async () => {
    for (const since of ["2024-13-45", "2023-02-29", "2024-04-31", "2024-00-10"]) {
      const answer = await call("recent_kev_entries", { since })
      expect(answer.isError, since).toBe(true)
      expect(textOf(answer), since).toContain("invalid_argument")
    }
    const leap = await call("recent_kev_entries", { since: "2024-02-29" })
    expect(leap.isError).toBeFalsy()
  })

  it("tools without arguments ignore unknown keys, like the tools with arguments", async () => {
    for (const tool of TOOL_DEFINITIONS.filter((d) => !("fields" in d.parameters))) {
      const answer = await call(tool.name, { junk: 1 })
      expect(answer.isError, `${tool.name}: ${textOf(answer)}`).toBeFalsy()
    }
    expect((await call("get_epss", { identifier: LOG4SHELL, junk: 1 })).isError).toBeFalsy()
  })
})

describe("MCP tool listing", () => {
  it("annotates every tool truthfully: reads are read-only and idempotent, issuing nonces writes, nothing is destructive or open-world", async () => {
    const { tools } = await client.listTools()
    expect(tools).toHaveLength(TOOL_DEFINITIONS.length)
    for (const tool of tools) {
      const writes = tool.name === "issue_nonces"
      expect(tool.annotations, tool.name).toMatchObject({
        readOnlyHint: !writes,
        destructiveHint: false,
        idempotentHint: !writes,
        openWorldHint: false
      })
    }
    const status = tools.find((t) => t.name === "get_rate_limit_status")!
    expect(status.description).not.toContain("without using a request")
    expect(status.description).toContain("counts as one request")
  })
})

describe("MCP prompts", () => {
  const identifiers = (n: number) => Array.from({ length: n }, (_, i) => `CVE-2021-${String(40000 + i)}`).join(",")

  it("prioritise_patches and compare_vulnerabilities refuse more than 50 identifiers (-32602, naming the limit)", async () => {
    for (const name of ["prioritise_patches", "compare_vulnerabilities"]) {
      const error = await refusal(client.getPrompt({ name, arguments: { identifiers: identifiers(51) } }))
      expect(error.code, name).toBe(-32602)
      expect(error.message, name).toContain("at most 50 identifiers")
      const fifty = await client.getPrompt({ name, arguments: { identifiers: identifiers(50) } })
      expect(JSON.stringify(fifty.messages), name).toContain("CVE-2021-40049")
    }
  })

  it("completion/complete suggests the fixed choices of a prompt argument and nothing for free text", async () => {
    const complete = async (name: string, argument: string, value: string) =>
      (await client.complete({ ref: { type: "ref/prompt", name }, argument: { name: argument, value } })).completion
        .values
    expect(await complete("ssvc_decision", "mission_impact", "")).toEqual(["low", "medium", "high"])
    expect(await complete("ssvc_decision", "mission_impact", "H")).toEqual(["high"])
    expect(await complete("review_guardrails", "focus", "p")).toEqual(["PII", "prompt injection"])
    expect(await complete("executive_summary", "audience", "c")).toEqual(["CISO", "customers"])
    expect(await complete("triage_vulnerability", "identifier", "CVE-")).toEqual([])
    const template = await client.complete({
      ref: { type: "ref/resource", uri: "vdb://vuln/{identifier}" },
      argument: { name: "identifier", value: "CVE" }
    })
    expect(template.completion.values).toEqual([])
    expect(
      (await refusal(
        client.complete({ ref: { type: "ref/prompt", name: "no_such_prompt" }, argument: { name: "x", value: "" } })
      )).code
    ).toBe(-32602)
  })
})

describe("MCP resources", () => {
  it("a known identifier reads as application/json", async () => {
    for (const uri of [`vdb://vuln/${LOG4SHELL}`, `vdb://exploits/${LOG4SHELL}`]) {
      const { contents } = await client.readResource({ uri })
      expect(contents, uri).toHaveLength(1)
      expect(contents[0]).toMatchObject({ uri, mimeType: "application/json" })
      expect(JSON.parse((contents[0] as { text: string }).text)).toMatchObject({ identifier: LOG4SHELL })
    }
  })

  it("an unknown identifier is resource-not-found (-32002) and an invalid one invalid params (-32602), never content", async () => {
    for (const uri of ["vdb://vuln/CVE-1999-99999", "vdb://exploits/CVE-1999-99999"]) {
      const error = await refusal(client.readResource({ uri }))
      expect(error.code, uri).toBe(-32002)
      expect(error.message, uri).toContain("unknown_identifier")
    }
    for (const uri of [`vdb://vuln/${LOG4SHELL}%2F..`, "vdb://exploits/not%20an%20id!"]) {
      const error = await refusal(client.readResource({ uri }))
      expect(error.code, uri).toBe(-32602)
      expect(error.message, uri).toContain("invalid_argument")
    }
    expect((await client.readResource({ uri: `vdb://vuln/${LOG4SHELL}` })).contents).toHaveLength(1)
  })

  it("on 2026-07-28 an unknown identifier gets the code the library gives a URI no template matches", async () => {
    const codes = await Effect.runPromise(Effect.scoped(
      Effect.gen(function*() {
        const mcp = yield* McpClient.McpClient
        expect(mcp.protocolVersion).toBe("2026-07-28")
        const codeOf = (uri: string) =>
          mcp.readResource({ uri }).pipe(
            Effect.flip,
            Effect.map((e) => e.reason._tag === "ProtocolError" ? e.reason.code : e.reason._tag)
          )
        return { unknown: yield* codeOf("vdb://vuln/CVE-1999-99999"), unmatched: yield* codeOf("vdb://nothing/here") }
      }).pipe(
        Effect.provide(
          McpClient.layerHttp({
            name: "vdb-test",
            version: "1.0.0",
            url: mcpUrl,
            protocol: McpProtocol.v2026_07_28,
            headers: { authorization: apiKey }
          })
        ),
        Effect.provide(FetchHttpClient.layer)
      )
    ))
    expect(codes.unmatched).toBe(-32602)
    expect(codes.unknown).toBe(codes.unmatched)
  })
})

describe("MCP server log", () => {
  it("no refusal above was logged as an error (a far-past since used to fail in the database)", () => {
    const { stdout, stderr } = server.output()
    expect(`${stdout}\n${stderr}`).not.toMatch(/"level":"ERROR"/)
  })
})
