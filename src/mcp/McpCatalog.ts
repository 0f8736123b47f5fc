import { Schema, SchemaAST } from "effect"
import { PROMPT_DEFINITIONS } from "./PromptDefinitions.ts"
import { RESOURCE_TEMPLATES } from "./ResourceTemplates.ts"
import { TOOL_DEFINITIONS } from "./ToolDefinitions.ts"

/**
 * The MCP surface as plain data (name, purpose, arguments), read from the
 * same definitions the server registers: `bin/vdb mcp tools|prompts` prints
 * it and docs/mcp.md is rendered from it (test/mcp/docs.test.ts keeps the
 * file in step).
 */
export interface ArgumentInfo {
  readonly name: string
  readonly type: string
  readonly required: boolean
  readonly description: string
}

export interface EntryInfo {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly arguments: ReadonlyArray<ArgumentInfo>
}

const typeName = (ast: SchemaAST.AST): string => {
  switch (ast._tag) {
    case "String":
      return "string"
    case "Number":
      return "number"
    case "Boolean":
      return "boolean"
    case "Arrays":
      return `array of ${ast.rest[0] === undefined ? "unknown" : typeName(ast.rest[0])}`
    default:
      return ast._tag.toLowerCase()
  }
}

const argumentsOf = (fields: Schema.Struct.Fields): ReadonlyArray<ArgumentInfo> =>
  Object.entries(fields).map(([name, field]) => ({
    name,
    type: typeName(field.ast),
    required: !SchemaAST.isOptional(field.ast),
    description: SchemaAST.resolveDescription(field.ast) ?? ""
  }))

export const toolCatalog = (): ReadonlyArray<EntryInfo & { readonly group: string }> =>
  TOOL_DEFINITIONS.map((t) => ({
    name: t.name,
    title: t.title,
    group: t.group,
    description: t.description,
    arguments: "fields" in t.parameters ? argumentsOf(t.parameters.fields as Schema.Struct.Fields) : []
  }))

export const promptCatalog = (): ReadonlyArray<EntryInfo> =>
  PROMPT_DEFINITIONS.map((p) => ({ name: p.name, title: p.title, description: p.description, arguments: argumentsOf(p.parameters) }))

const escapeCell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ")
const argumentList = (args: ReadonlyArray<ArgumentInfo>) =>
  args.length === 0
    ? "none"
    : args.map((a) => `\`${a.name}\`${a.required ? "" : "?"} (${a.type})${a.description === "" ? "" : `: ${a.description}`}`).join("<br>")

/** docs/mcp.md, from the definitions. */
export const renderDocs = (): string => {
  const tools = toolCatalog()
  const prompts = promptCatalog()
  const lines: Array<string> = [
    "# MCP server",
    "",
    "<!-- Generated from src/mcp/ToolDefinitions.ts, src/mcp/PromptDefinitions.ts and src/mcp/ResourceTemplates.ts",
    "     by src/mcp/McpCatalog.ts; do not edit. Regenerate: UPDATE_DOCS=1 npx vitest run test/mcp/docs.test.ts -->",
    "",
    "The MCP service (`VDB_MCP_PORT`, default 8083) serves `POST /mcp` with the",
    "`2026-07-28` revision (stateless: `server/discover`) and the session-based",
    "`2025-11-25`, `2025-06-18`, `2025-03-26` and `2024-11-05` revisions; a client",
    "offering an unknown revision gets `2025-11-25`. Other methods on `/mcp` are",
    "405 (`Allow: POST`); other paths are 404, and a path segment over 2,048",
    "characters 414, all as `{\"error\":{\"code\",\"message\"}}`.",
    "",
    "Every request needs `Authorization: ApiKey <org_uuid>:<hex>`, the vulnerability",
    "API's credential (`bin/vdb org create` prints it as `apiKey`); without it 401 with a `WWW-Authenticate`",
    "naming `/.well-known/oauth-protected-resource` (RFC 9728 metadata). An inactive",
    "organization gets 403. Each POST counts against the organization's rate limits",
    "(429 with `Retry-After` when used up) and is written to the usage log (route `/mcp`).",
    "`GET /health` answers without credentials. A request body over 1 MiB is refused with 413",
    "`payload_too_large` before it is parsed.",
    "",
    "Tool results carry `structuredContent` `{text, data}`: `text` is a short rendering,",
    "`data` the structured result. Failures are tool errors whose message starts with a",
    "code: `invalid_argument`, `unknown_identifier`, `not_permitted`, `unavailable`",
    "(over the rate limit the HTTP answer is 429 with `Retry-After`, before any tool runs).",
    "Invalid arguments are JSON-RPC error -32602 up to `2025-06-18` and a tool error from",
    "`2025-11-25` on. Lists page with `cursor` (from `nextCursor`) and `limit` (default 20,",
    "at most 100); long texts end with a `[truncated: ...]` marker saying how to read on.",
    "",
    "Wiring an agent by hand: `bin/vdb mcp tools` and `bin/vdb mcp prompts` print these lists.",
    "",
    `## Tools (${tools.length})`,
    ""
  ]
  for (const group of ["vulnerabilities", "exploits", "account", "gateway"]) {
    lines.push(`### ${group[0]!.toUpperCase()}${group.slice(1)}`, "", "| Tool | Purpose | Arguments |", "| --- | --- | --- |")
    for (const t of tools.filter((t) => t.group === group)) {
      lines.push(`| \`${t.name}\` | ${escapeCell(t.description)} | ${escapeCell(argumentList(t.arguments))} |`)
    }
    lines.push("")
  }
  lines.push(`## Prompts (${prompts.length})`, "", "| Prompt | Purpose | Arguments |", "| --- | --- | --- |")
  for (const p of prompts) lines.push(`| \`${p.name}\` | ${escapeCell(p.description)} | ${escapeCell(argumentList(p.arguments))} |`)
  lines.push("", "Each prompt runs its tools in process for the calling organization and returns one", "user message: the tool results, then the instruction.", "")
  lines.push("## Resource templates", "", "| URI template | Content |", "| --- | --- |")
  for (const r of RESOURCE_TEMPLATES) lines.push(`| \`${r.uriTemplate}\` | ${r.description} |`)
  lines.push("")
  return lines.join("\n")
}
