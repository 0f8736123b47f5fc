import { Context, Effect, Schema } from "effect"
import { McpSchema, McpServer } from "effect/ai"
import { parseApiKey } from "../auth/ApiKey.ts"

/**
 * The organization an MCP request acts for. The HTTP gate (`McpGate`) has
 * already verified the credential, counted the request and refused inactive
 * organizations before the MCP server sees it; this only carries the uuid.
 */
export class McpCaller extends Context.Service<McpCaller, {
  readonly orgUuid: string
}>()("vdb/mcp/McpCaller") {}

/** A JSON-RPC error for a request that reached the MCP server without a credential (the gate prevents it). */
export class McpUnauthenticated extends Schema.Error<McpUnauthenticated>("McpUnauthenticated")({
  ...McpSchema.McpErrorBase.fields,
  _tag: Schema.tag("McpUnauthenticated"),
  code: Schema.tag(-32001)
}) {}

/** Provides `McpCaller` to every tool call, prompt and resource read from the request's `Authorization`. */
export const CallerMiddleware = McpServer.middleware<{ provides: McpCaller }>()((effect, { headers }) => {
  const key = parseApiKey((headers["authorization"] ?? "").trim())
  return key === undefined
    ? Effect.fail(
      new McpUnauthenticated({ message: "missing credentials: send Authorization: ApiKey <org_uuid>:<hex>" })
    )
    : Effect.provideService(effect, McpCaller, McpCaller.of({ orgUuid: key.orgUuid }))
})
