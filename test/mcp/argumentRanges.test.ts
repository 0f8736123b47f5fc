import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { McpError } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runVdb } from "../support/processes.ts"
import { connectSdk, type McpServerUnderTest, startMcpServer, textOf, type ToolAnswer } from "./mcpServer.ts"

/**
 * Issue 33: numeric tool arguments out of range are refused, with the range, never clamped
 * (`limit: -1` gave one item, `max_chars: 1e9` 50,000 characters, while `count: 0` was refused),
 * and `test_guardrail_text` refuses a text over its cap as `prioritise_patches` refuses a long
 * list. Refusals happen as the arguments are decoded, so no data is needed: a real `bin/vdb
 * serve mcp` on an empty database, the official MCP SDK client.
 */
let running: McpServerUnderTest | undefined
let apiKey: string
let client: Client

const connect = (protocolVersion?: string) => connectSdk(running!.mcpUrl, apiKey, protocolVersion)

beforeAll(async () => {
  running = await startMcpServer()
  const created = await runVdb([
    "org",
    "create",
    "--name",
    "mcp-ranges",
    "--per-minute",
    "0",
    "--per-week",
    "0",
    "--json"
  ], running.env)
  expect(created.code, created.stderr).toBe(0)
  apiKey = (JSON.parse(created.stdout) as { apiKey: string }).apiKey
  client = await connect()
}, 120_000)

afterAll(async () => {
  await client?.close()
  await running?.stop()
})

/** Arguments every tool requires, so only the numeric one under test is wrong. */
const REQUIRED: Record<string, unknown> = {
  identifier: "CVE-2021-44228",
  source: "mitre",
  uuid: "none",
  text: "hello",
  identifiers: ["CVE-2021-44228"]
}

interface Property {
  readonly type?: string
  readonly minimum?: number
  readonly maximum?: number
}

describe("MCP numeric tool arguments", () => {
  it("every numeric argument of every tool is a JSON Schema integer with its range; outside it or with a fraction it is refused, naming the range", async () => {
    const { tools } = await client.listTools()
    const numeric = tools.flatMap((tool) =>
      Object.entries((tool.inputSchema.properties ?? {}) as Record<string, Property>)
        .filter(([, p]) => p.type === "number" || p.type === "integer")
        .map(([name, p]) => ({ tool: tool.name, name, p, required: tool.inputSchema.required ?? [] }))
    )
    const pages = [
      "list_affected_products",
      "list_references",
      "recent_kev_entries",
      "list_exploits",
      "list_exploitdb_entries",
      "list_metasploit_modules",
      "list_nuclei_templates",
      "list_pocs",
      "list_guardrails",
      "list_policies",
      "list_inference_log"
    ]
    expect(numeric.map((n) => `${n.tool}.${n.name}`).sort()).toEqual([
      ...pages.map((tool) => `${tool}.limit`),
      "get_source_record.offset",
      ...["get_source_record", "get_description", "get_exploit"].map((tool) => `${tool}.max_chars`),
      "issue_nonces.count"
    ].sort())
    for (const { name, p, required, tool } of numeric) {
      const label = `${tool}.${name}`
      // Before: a plain `number` without bounds (Schema.Finite), and out-of-range values clamped.
      expect(p.type, label).toBe("integer")
      expect(p.minimum, label).toBeTypeOf("number")
      const range = p.maximum === undefined || p.maximum >= Number.MAX_SAFE_INTEGER
        ? `>= ${p.minimum}`
        : `from ${p.minimum} to ${p.maximum}`
      const base = Object.fromEntries(required.map((key) => [key, REQUIRED[key]]))
      const wrong = [
        p.minimum! - 1,
        p.minimum! + 0.5,
        ...(p.maximum === undefined || p.maximum >= Number.MAX_SAFE_INTEGER ? [] : [p.maximum + 1, 1e9])
      ]
      for (const value of wrong) {
        const answer = (await client.callTool({ name: tool, arguments: { ...base, [name]: value } })) as ToolAnswer
        expect(answer.isError, `${label} = ${value}`).toBe(true)
        expect(textOf(answer), `${label} = ${value}`).toContain(`${name} must be a whole number ${range}`)
      }
    }
  })

  it("the cases the issue names: limit -1, max_chars 1e9 and count 0 are refused alike", async () => {
    const cases: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
      // Before: one rule's page (limit clamped to 1).
      ["list_guardrails", { limit: -1 }, "limit must be a whole number from 1 to 100"],
      ["list_inference_log", { limit: 101 }, "limit must be a whole number from 1 to 100"],
      // Before: read with max_chars clamped to 50,000.
      [
        "get_description",
        { identifier: "CVE-2021-44228", max_chars: 1e9 },
        "max_chars must be a whole number from 100 to 50000"
      ],
      [
        "get_source_record",
        { identifier: "CVE-2021-44228", source: "mitre", offset: -5 },
        "offset must be a whole number >= 0"
      ],
      // Before: refused by the tool, "count must be between 1 and 100".
      ["issue_nonces", { count: 0 }, "count must be a whole number from 1 to 100"]
    ]
    for (const [tool, args, message] of cases) {
      const answer = (await client.callTool({ name: tool, arguments: args })) as ToolAnswer
      expect(answer.isError, tool).toBe(true)
      expect(textOf(answer), tool).toContain(message)
    }
    // In range, the edges work.
    for (
      const [tool, args] of [["list_guardrails", { limit: 1 }], ["list_policies", { limit: 100 }], ["issue_nonces", {
        count: 100
      }]] as const
    ) {
      const answer = (await client.callTool({ name: tool, arguments: args })) as ToolAnswer
      expect(answer.isError, `${tool}: ${textOf(answer)}`).toBeFalsy()
    }
  })

  it("on 2025-06-18 an out-of-range number is JSON-RPC error -32602 with the same message", async () => {
    const pinned = await connect("2025-06-18")
    try {
      const error = await pinned.callTool({ name: "list_policies", arguments: { limit: 0 } }).then(
        () => undefined,
        (e: unknown) => e
      )
      expect(error).toBeInstanceOf(McpError)
      expect((error as McpError).code).toBe(-32602)
      expect((error as McpError).message).toContain("limit must be a whole number from 1 to 100")
    } finally {
      await pinned.close()
    }
  })
})

describe("MCP prompt test_guardrail_text", () => {
  it("refuses a text over 100,000 characters with -32602 naming the cap, and renders one at the cap", async () => {
    // Before: rendered, with the tool's refusal in place of a decision, then asked to explain "the decision above".
    const error = await client.getPrompt({ name: "test_guardrail_text", arguments: { text: "x".repeat(100_001) } })
      .then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(McpError)
    expect((error as McpError).code).toBe(-32602)
    expect((error as McpError).message).toContain("text longer than 100000 characters")
    const atCap = await client.getPrompt({ name: "test_guardrail_text", arguments: { text: "x".repeat(100_000) } })
    expect(JSON.stringify(atCap.messages)).toContain("decision: allow")
  })

  it("check_guardrails states the same cap in its JSON Schema and refuses a longer text", async () => {
    const { tools } = await client.listTools()
    const text = (tools.find((t) => t.name === "check_guardrails")!.inputSchema.properties as Record<
      string,
      { maxLength?: number }
    >).text
    expect(text?.maxLength).toBe(100_000)
    const answer =
      (await client.callTool({ name: "check_guardrails", arguments: { text: "x".repeat(100_001) } })) as ToolAnswer
    expect(answer.isError).toBe(true)
    expect(textOf(answer)).toContain("text longer than 100000 characters")
  })
})
