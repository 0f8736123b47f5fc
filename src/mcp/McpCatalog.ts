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

/** `integer` where the JSON Schema a client sees says so (a whole-number argument), else the schema's kind. */
const typeOf = (name: string, field: Schema.Struct.Fields[string]) => {
  const property = (Schema.toJsonSchemaDocument(Schema.Struct({ [name]: field })).schema as {
    properties?: Record<string, { type?: unknown }>
  })
    .properties?.[name]
  return property?.type === "integer" ? "integer" : typeName(field.ast)
}

const argumentsOf = (fields: Schema.Struct.Fields): ReadonlyArray<ArgumentInfo> =>
  Object.entries(fields).map(([name, field]) => ({
    name,
    type: typeOf(name, field),
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
  PROMPT_DEFINITIONS.map((p) => ({
    name: p.name,
    title: p.title,
    description: p.description,
    arguments: argumentsOf(p.parameters)
  }))

const escapeCell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ")
const argumentList = (args: ReadonlyArray<ArgumentInfo>) =>
  args.length === 0
    ? "none"
    : args.map((a) =>
      `\`${a.name}\`${a.required ? "" : "?"} (${a.type})${a.description === "" ? "" : `: ${a.description}`}`
    ).join("<br>")

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
    "offering an unknown revision gets `2025-11-25`. `DELETE /mcp` with the",
    "`Mcp-Session-Id` ends that session (204; later requests with the id get 404).",
    "Other methods on `/mcp` are 405 (`Allow: POST, DELETE`); other paths are 404, and",
    "a path segment over 2,048 characters 414, all as `{\"error\":{\"code\",\"message\"}}`.",
    "So are the MCP transport's own refusals: 406 `not_acceptable` (send",
    "`Accept: application/json, text/event-stream`), 415 `unsupported_media_type` (send",
    "`Content-Type: application/json`), 400 `bad_request` (a batch outside a `2025-03-26`",
    "session, a DELETE without `Mcp-Session-Id`), 403 `forbidden` (a request with an",
    "`Origin` header: browsers are not served) and 404 `not_found` (an unknown or ended",
    "session). JSON-RPC errors keep the JSON-RPC form (`code`, `message`, `data`): a body",
    "that is not JSON is HTTP 400 with error -32700, a message that is not JSON-RPC (no",
    "`method`, no `result` or `error`) 400 with -32600, as is a batch holding anything but",
    "JSON-RPC 2.0 messages, more than 1,000 of them, or two requests with one id (such a",
    "batch costs one unit of the limits, as any POST); a request the handlers refuse is HTTP 200 (an",
    "unknown tool -32602; an unknown method -32601, which the stateless `2026-07-28`",
    "revision answers with 404).",
    "",
    "Every request needs `Authorization: ApiKey <org_uuid>:<hex>`, the vulnerability",
    "API's credential (`bin/vdb org create` prints it as `apiKey`); without it 401 with a `WWW-Authenticate`",
    "naming `/.well-known/oauth-protected-resource` (RFC 9728 metadata). An inactive",
    "organization gets 403. A request body over 1 MiB is refused with 413",
    "`payload_too_large` before it is parsed. Each JSON-RPC request counts against the",
    "organization's rate limits: a POST costs one, a batch (`2025-03-26`) one for each",
    "request in it (its notifications and responses cost nothing, but no POST costs less",
    "than one). A batch is admitted whole or refused whole (429 with `Retry-After`, and",
    "nothing counted). A DELETE costs nothing. Every POST and DELETE is written once to the",
    "usage log (route `/mcp`). `GET /health` answers without credentials.",
    "",
    "With `VDB_MCP_URL` set (the service's public origin, e.g. `https://mcp.example` behind",
    "a TLS proxy: RFC 9728 clients check that `resource` is the URL they used), the challenge",
    "and the discovery document name it, and the document is `public, max-age=300`. An",
    "invalid value (a path, a query, a scheme other than http and https) stops the server at",
    "start. Unset, they name `http://<Host>` when the request's",
    "`Host` is a valid `host[:port]` (a DNS name, an IPv4 address or a bracketed IPv6",
    "address; a numeric port). Any other `Host` is not echoed: they name the service's own",
    "address instead (`VDB_HOST:VDB_MCP_PORT`, `127.0.0.1` for a wildcard `VDB_HOST`). The",
    "discovery document is `cache-control: public, max-age=300` with `vary: host`, or",
    "`private, no-store` when it names the service's own address.",
    "",
    "Sessions of the session-based revisions live in the server's memory, so the gate",
    "bounds them (the MCP library, effect's `McpServer`, has no expiry and no cap of its own):",
    "",
    "- a session is used only by the organization that opened it; another organization",
    "  naming its id gets 404, as for an unknown session;",
    "- a session unused for `VDB_MCP_SESSION_IDLE` (default 30 minutes) is ended: the next",
    "  request naming it gets 404, and the MCP specification has the client initialize again;",
    "- an organization holds at most `VDB_MCP_SESSIONS_PER_ORG` sessions (default 100);",
    "  opening one more ends its least recently used session;",
    "- a process holds at most `VDB_MCP_SESSIONS_MAX` sessions (default 2,000) of all",
    "  organizations together; opening one more ends the least recently used of any",
    "  organization (a session holds its `initialize`: 2,000 are at most about 330 MB);",
    "- an `initialize` over 8 KiB is 413 `payload_too_large` (the session keeps it whole);",
    "- these settings are checked at start: a cap under 1 or an idle time under a second",
    "  stops the server with the reason.",
    "",
    "`2026-07-28`'s `subscriptions/listen` is not served (`-32601`): nothing this server",
    "offers changes at run time, and each stream would hold its request open for as long",
    "as the client liked, with no bound.",
    "",
    "A client should still end its session when it is done (the official SDK's",
    "`transport.terminateSession()` sends the DELETE). `2026-07-28` keeps no session.",
    "",
    "A `2026-07-28` request by hand (an SDK does this for you) carries the revision in",
    "`MCP-Protocol-Version`, its method in `Mcp-Method` and, for a call naming a tool,",
    "prompt or resource, that name in `Mcp-Name` (each must match the body, else -32020),",
    "and both `_meta` keys below in its `params` (else -32602):",
    "",
    "```sh",
    "# The organization's key, `ApiKey <uuid>:<hex>`: the `apiKey` that `bin/vdb org create --json` printed (the README's `$org`).",
    "API_KEY=$(echo \"$org\" | node -p 'JSON.parse(require(\"fs\").readFileSync(0)).apiKey')",
    "curl -s localhost:8083/mcp -H \"Authorization: $API_KEY\" -H 'content-type: application/json' \\",
    "  -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' \\",
    "  -H 'mcp-method: tools/call' -H 'mcp-name: lookup_vulnerability' \\",
    "  -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"lookup_vulnerability\",",
    "      \"arguments\":{\"identifier\":\"CVE-2021-44228\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",",
    "      \"io.modelcontextprotocol/clientCapabilities\":{}}}}'",
    "```",
    "",
    "`server/discover` is the same with `mcp-method: server/discover`, no `Mcp-Name`, and",
    "only `_meta` in `params`.",
    "",
    "Tool results carry `structuredContent` `{text, data}`: `text` is a short rendering,",
    "`data` the structured result. Failures are tool errors whose message starts with a",
    "code: `invalid_argument`, `unknown_identifier`, `not_permitted`, `unavailable`",
    "(over the rate limit the HTTP answer is 429 with `Retry-After`, before any tool runs).",
    "Invalid arguments are JSON-RPC error -32602 up to `2025-06-18` and a tool error from",
    "`2025-11-25` on. A number outside its range (each argument below states it; the tool's",
    "JSON Schema has it as `minimum` and `maximum`) or with a fraction is an invalid argument",
    "whose message names the argument and the range; nothing is clamped. Lists page with",
    "`cursor` (from `nextCursor`) and `limit` (1 to 100, default 20); long texts end with a",
    "`[truncated: ...]` marker saying how to read on (`max_chars`, 100 to 50,000, default 4,000).",
    "The prompts take text only; a prompt refuses what its tools would refuse (more than 50",
    "identifiers, a `text` over 100,000 characters) as -32602.",
    "",
    "Wiring an agent by hand: `bin/vdb mcp tools` and `bin/vdb mcp prompts` print these lists.",
    "",
    `## Tools (${tools.length})`,
    ""
  ]
  for (const group of ["vulnerabilities", "exploits", "account", "gateway"]) {
    lines.push(
      `### ${group[0]!.toUpperCase()}${group.slice(1)}`,
      "",
      "| Tool | Purpose | Arguments |",
      "| --- | --- | --- |"
    )
    for (const t of tools.filter((t) => t.group === group)) {
      lines.push(`| \`${t.name}\` | ${escapeCell(t.description)} | ${escapeCell(argumentList(t.arguments))} |`)
    }
    lines.push("")
  }
  lines.push(`## Prompts (${prompts.length})`, "", "| Prompt | Purpose | Arguments |", "| --- | --- | --- |")
  for (const p of prompts) {
    lines.push(`| \`${p.name}\` | ${escapeCell(p.description)} | ${escapeCell(argumentList(p.arguments))} |`)
  }
  lines.push(
    "",
    "Each prompt runs its tools in process for the calling organization and returns one",
    "user message: the tool results, then the instruction.",
    ""
  )
  lines.push("## Resource templates", "", "| URI template | Content |", "| --- | --- |")
  for (const r of RESOURCE_TEMPLATES) lines.push(`| \`${r.uriTemplate}\` | ${r.description} |`)
  lines.push(
    "",
    "Contents are `application/json`. A read of an unknown identifier is JSON-RPC error -32002",
    "(resource not found; -32602 naming the uri on `2026-07-28`, as for a uri no template matches),",
    "an invalid identifier -32602. `completion/complete` answers every prompt argument and the",
    "templates' `identifier`: the arguments with fixed choices suggest them, free text gets an empty list.",
    ""
  )
  return lines.join("\n")
}
