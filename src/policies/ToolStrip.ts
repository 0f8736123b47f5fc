import type { Surface } from "../../schema/GatewayRequest.ts"
import { isObject, type McpServerRef, mcpOfServer, mcpOfTool, toolNameOf } from "./DeclaredCapabilities.ts"

type Json = Readonly<Record<string, unknown>>

export interface Stripped {
  readonly kind: "tool" | "mcp"
  /** The tool name, or the MCP server's name (its URL when it has none). */
  readonly name: string
}

export interface StripResult {
  /** A new top-level object when something was removed; undefined when the body is unchanged. */
  readonly body: Json | undefined
  readonly stripped: ReadonlyArray<Stripped>
}

const unchanged: StripResult = { body: undefined, stripped: [] }

const serverMatches = (ref: McpServerRef, strip: ReadonlySet<string>) =>
  (ref.name !== undefined && strip.has(ref.name)) || (ref.url !== undefined && strip.has(ref.url))

const serverLabel = (ref: McpServerRef) => ref.name ?? ref.url ?? "(unnamed)"

/** The tool a `tool_choice` forces, if any. */
const forcedTool = (choice: unknown): string | undefined => {
  if (!isObject(choice)) return undefined
  if (isObject(choice.function) && typeof choice.function.name === "string") return choice.function.name
  return typeof choice.name === "string" ? choice.name : undefined
}

/**
 * Removes the tools and MCP servers that strip entries name. Only the
 * top-level fields that change are replaced (the rest of the body is shared,
 * not copied); a `tools` list left empty is removed with the fields that only
 * make sense beside it (`tool_choice`, `parallel_tool_calls`), since providers
 * refuse an empty list or a choice without tools.
 */
export const stripDeclared = (
  surface: Surface,
  body: Json,
  stripTools: ReadonlySet<string>,
  stripMcp: ReadonlySet<string>
): StripResult => {
  if (stripTools.size === 0 && stripMcp.size === 0) return unchanged
  const stripped: Array<Stripped> = []
  const out: Record<string, unknown> = { ...body }
  let changed = false

  if (Array.isArray(body.tools)) {
    const kept = body.tools.filter((tool) => {
      const name = toolNameOf(surface, tool)
      if (name !== undefined && stripTools.has(name)) {
        stripped.push({ kind: "tool", name })
        return false
      }
      const mcp = mcpOfTool(surface, tool)
      if (mcp !== undefined && serverMatches(mcp, stripMcp)) {
        stripped.push({ kind: "mcp", name: serverLabel(mcp) })
        return false
      }
      return true
    })
    if (kept.length !== body.tools.length) {
      changed = true
      const removedNames = new Set(stripped.filter((s) => s.kind === "tool").map((s) => s.name))
      if (kept.length === 0) {
        delete out.tools
        delete out.tool_choice
        delete out.parallel_tool_calls
      } else {
        out.tools = kept
        const forced = forcedTool(body.tool_choice)
        if (forced !== undefined && removedNames.has(forced)) delete out.tool_choice
      }
    }
  }

  if (surface === "chat" && Array.isArray(body.functions)) {
    const kept = body.functions.filter((fn) => {
      if (isObject(fn) && typeof fn.name === "string" && stripTools.has(fn.name)) {
        stripped.push({ kind: "tool", name: fn.name })
        return false
      }
      return true
    })
    if (kept.length !== body.functions.length) {
      changed = true
      if (kept.length === 0) {
        delete out.functions
        delete out.function_call
      } else {
        out.functions = kept
      }
    }
  }

  if (surface === "messages" && Array.isArray(body.mcp_servers)) {
    const kept = body.mcp_servers.filter((server) => {
      const ref = mcpOfServer(server)
      if (ref !== undefined && serverMatches(ref, stripMcp)) {
        stripped.push({ kind: "mcp", name: serverLabel(ref) })
        return false
      }
      return true
    })
    if (kept.length !== body.mcp_servers.length) {
      changed = true
      if (kept.length === 0) delete out.mcp_servers
      else out.mcp_servers = kept
    }
  }

  return changed ? { body: out, stripped } : unchanged
}
