import { Effect, Layer, Schema } from "effect"
import { McpSchema, McpServer } from "effect/ai"
import { McpToolHandlers } from "./McpTools.ts"

const Identifier = McpSchema.param("identifier", Schema.String)

/**
 * Records as MCP resources, for clients that browse resources instead of
 * calling tools: `vdb://vuln/{identifier}` (every source's record, JSON) and
 * `vdb://exploits/{identifier}` (the first page of exploits, JSON).
 */
export const McpResourcesLayer = Layer.unwrap(Effect.gen(function*() {
  const handlers = yield* McpToolHandlers
  const asJson = (tool: string, params: Record<string, unknown>) =>
    handlers[tool]!(params).pipe(
      Effect.map((r) => JSON.stringify(r.data, null, 2)),
      Effect.catchTag("ToolFailure", (e) => Effect.succeed(JSON.stringify({ error: e.message })))
    )
  return Layer.mergeAll(
    McpServer.resource`vdb://vuln/${Identifier}`({
      name: "Vulnerability record",
      description: "Every source's view of a vulnerability: sources, aliases, titles (read get_source_record for a full record)",
      mimeType: "application/json",
      content: (_uri, identifier) => asJson("lookup_vulnerability", { identifier: decodeURIComponent(identifier) })
    }),
    McpServer.resource`vdb://exploits/${Identifier}`({
      name: "Vulnerability exploits",
      description: "The first page of public exploits for a vulnerability, with counts per source",
      mimeType: "application/json",
      content: (_uri, identifier) => asJson("list_exploits", { identifier: decodeURIComponent(identifier) })
    })
  )
}))
