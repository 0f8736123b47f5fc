import { Context, Effect, Layer } from "effect"
import { McpServer, Tool, Toolkit } from "effect/ai"
import { withToolMetrics } from "../metrics/McpMetrics.ts"
import { accountToolHandlers } from "./AccountTools.ts"
import { exploitToolHandlers } from "./ExploitTools.ts"
import { gatewayToolHandlers } from "./GatewayTools.ts"
import { McpCaller } from "./McpCaller.ts"
import { riskToolHandlers } from "./RiskTools.ts"
import { TOOL_DEFINITIONS, type ToolDefinition, type VdbToolDefinition } from "./ToolDefinitions.ts"
import { ToolFailure, ToolResult } from "./ToolKit.ts"
import type { ToolHandlers } from "./VulnLookups.ts"
import { vulnToolHandlers } from "./VulnTools.ts"

/**
 * The tools' handlers over the domain services, in process (the same
 * services the HTTP API uses; never the API over the network), kept apart
 * from the MCP registration so prompts and resources reuse them.
 */
const makeToolHandlers = Effect.map(
  Effect.all([vulnToolHandlers, riskToolHandlers, exploitToolHandlers, accountToolHandlers, gatewayToolHandlers]),
  ([vulns, risk, exploits, account, gateway]): ToolHandlers => ({
    ...vulns,
    ...risk,
    ...exploits,
    ...account,
    ...gateway
  })
)

// One toolkit, built from the definitions: the handler record above must name every tool.
// The hints default to the most cautious values (destructive, not idempotent, open world), so
// each is set: no tool deletes or overwrites anything, a read gives the same answer when
// repeated (issuing nonces does not: each call adds new ones), and all act on vdb's own data.
const makeTool = <D extends VdbToolDefinition>(d: D) =>
  Tool.make(d.name, {
    description: d.description,
    parameters: d.parameters,
    success: ToolResult,
    failure: ToolFailure,
    dependencies: [McpCaller]
  }).annotate(Tool.Title, d.title)
    .annotate(Tool.Readonly, !d.writes)
    .annotate(Tool.Destructive, false)
    .annotate(Tool.Idempotent, !d.writes)
    .annotate(Tool.OpenWorld, false)
/** Each definition's own tool: its name with its arguments (`makeTool` over one definition, not over their union). */
type VdbTool<D> = D extends ToolDefinition<infer Name, infer Parameters> ? Tool.Tool<Name, {
    readonly parameters: Parameters
    readonly success: typeof ToolResult
    readonly failure: typeof ToolFailure
    readonly failureMode: "error"
  }, McpCaller> :
  never
// `map` over the tuple types every element as the tool of all the names at once; each is in fact its own definition's.
const tools = TOOL_DEFINITIONS.map(makeTool) as ReadonlyArray<VdbTool<VdbToolDefinition>>
export const VdbToolkit = Toolkit.make(...tools)

/** The handlers as a service: tools, prompts and resources share one set. */
export class McpToolHandlers extends Context.Service<McpToolHandlers, ToolHandlers>()("vdb/mcp/McpToolHandlers") {
  static readonly layer = Layer.effect(
    McpToolHandlers,
    Effect.map(makeToolHandlers, (handlers) => {
      const missing = TOOL_DEFINITIONS.filter((d) => handlers[d.name] === undefined)
      if (missing.length > 0) throw new Error(`MCP tools without a handler: ${missing.map((d) => d.name).join(", ")}`)
      return handlers
    })
  )
}

/** Registers the 31 tools on the MCP server. */
export const McpToolsLayer = McpServer.toolkit(VdbToolkit).pipe(
  Layer.provide(VdbToolkit.toLayer(Effect.gen(function*() {
    return withToolMetrics(yield* McpToolHandlers)
  })))
)
