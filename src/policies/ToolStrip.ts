import type { Surface } from "../../schema/GatewayRequest.ts"
import type { Removal } from "../guardrails/JsonSplice.ts"
import {
  isObject,
  KIRO_TOOLS_PATH,
  mcpOfServer,
  mcpOfTool,
  type McpServerRef,
  toolNameOf,
  valueAt
} from "./DeclaredCapabilities.ts"
import { canonicalMcpUrl } from "./McpServerUrl.ts"

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
  /** The same change as removals from the client's bytes (`spliceEdits`), so nothing else is rewritten. */
  readonly removals: ReadonlyArray<Removal>
}

const unchanged: StripResult = { body: undefined, stripped: [], removals: [] }

/** By name, or by URL in its canonical form (strip entries are canonical from the snapshot). */
const serverMatches = (ref: McpServerRef, strip: ReadonlySet<string>) => {
  if (ref.name !== undefined && strip.has(ref.name)) return true
  const url = ref.url === undefined ? undefined : canonicalMcpUrl(ref.url)
  return url !== undefined && strip.has(url)
}

/** Never the URL as sent: its query or user information may hold a credential. */
const serverLabel = (ref: McpServerRef) =>
  ref.name ?? (ref.url === undefined ? undefined : canonicalMcpUrl(ref.url)) ?? "(unnamed)"

/** The tool a `tool_choice` (or a tool entry of `allowed_tools`) names, if any: `function`, `custom`, or its own `name`. */
const choiceName = (choice: unknown): string | undefined => {
  if (!isObject(choice)) return undefined
  if (isObject(choice.function) && typeof choice.function.name === "string") return choice.function.name
  if (isObject(choice.custom) && typeof choice.custom.name === "string") return choice.custom.name
  return typeof choice.name === "string" ? choice.name : undefined
}

/**
 * What becomes of a `tool_choice` once `removed` tools and `removedServers` are gone: kept, removed
 * (it forces one of them, or a tool of a removed MCP server), or, for `allowed_tools` (chat:
 * `allowed_tools.tools`; responses: `tools`), the indices of its entries to remove (all of them:
 * the choice itself goes).
 */
const choiceAfterStrip = (
  choice: unknown,
  removed: ReadonlySet<string>,
  removedServers: ReadonlySet<string>
): {
  readonly remove: boolean
  readonly entries?: { readonly path: ReadonlyArray<string>; readonly indices: ReadonlyArray<number> }
} => {
  if (!isObject(choice)) return { remove: false }
  if (choice.type === "allowed_tools") {
    const holder = isObject(choice.allowed_tools) ? choice.allowed_tools : choice
    const path = holder === choice ? ["tools"] : ["allowed_tools", "tools"]
    if (!Array.isArray(holder.tools)) return { remove: false }
    const indices = holder.tools.flatMap((entry, index) => {
      const name = choiceName(entry)
      return name !== undefined && removed.has(name) ? [index] : []
    })
    return indices.length > 0 && indices.length === holder.tools.length
      ? { remove: true }
      : { remove: false, entries: { path, indices } }
  }
  if (choice.type === "mcp" && typeof choice.server_label === "string" && removedServers.has(choice.server_label)) {
    return { remove: true }
  }
  const name = choiceName(choice)
  return { remove: name !== undefined && removed.has(name) }
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
  if (surface === "kiro") return stripKiro(body, stripTools)
  const stripped: Array<Stripped> = []
  const out: Record<string, unknown> = { ...body }
  const removals: Array<Removal> = []
  let changed = false
  const removeMember = (key: string) => {
    if (!Object.hasOwn(body, key)) return
    delete out[key]
    removals.push({ path: [key], remove: true })
  }
  /** Keeps the elements of the list `key` that `keep` admits; the others are removed. */
  const filterList = (key: string, list: ReadonlyArray<unknown>, keep: (element: unknown) => boolean) => {
    const kept: Array<unknown> = []
    const gone: Array<Removal> = []
    list.forEach((element, index) => {
      if (keep(element)) kept.push(element)
      else gone.push({ path: [key, index], remove: true })
    })
    return {
      kept,
      removeOthers: () => {
        out[key] = kept
        removals.push(...gone)
      }
    }
  }

  if (Array.isArray(body.tools)) {
    const { kept, removeOthers } = filterList("tools", body.tools, (tool) => {
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
      const removedServers = new Set(stripped.filter((s) => s.kind === "mcp").map((s) => s.name))
      if (kept.length === 0) {
        removeMember("tools")
        removeMember("tool_choice")
        removeMember("parallel_tool_calls")
      } else {
        removeOthers()
        const choice = choiceAfterStrip(body.tool_choice, removedNames, removedServers)
        if (choice.remove) removeMember("tool_choice")
        else if (choice.entries !== undefined && choice.entries.indices.length > 0) {
          const gone = new Set(choice.entries.indices)
          out.tool_choice = replaceAt(
            body.tool_choice as Json,
            choice.entries.path,
            (list) => (list as ReadonlyArray<unknown>).filter((_, index) => !gone.has(index))
          )
          for (const index of choice.entries.indices) {
            removals.push({ path: ["tool_choice", ...choice.entries.path, index], remove: true })
          }
        }
      }
    }
  }

  if (surface === "chat" && Array.isArray(body.functions)) {
    const { kept, removeOthers } = filterList("functions", body.functions, (fn) => {
      if (isObject(fn) && typeof fn.name === "string" && stripTools.has(fn.name)) {
        stripped.push({ kind: "tool", name: fn.name })
        return false
      }
      return true
    })
    if (kept.length !== body.functions.length) {
      changed = true
      if (kept.length === 0) {
        removeMember("functions")
        removeMember("function_call")
      } else {
        removeOthers()
        const forced = choiceName(body.function_call)
        if (forced !== undefined && stripTools.has(forced)) removeMember("function_call")
      }
    }
  }

  if (surface === "messages" && Array.isArray(body.mcp_servers)) {
    const { kept, removeOthers } = filterList("mcp_servers", body.mcp_servers, (server) => {
      const ref = mcpOfServer(server)
      if (ref !== undefined && serverMatches(ref, stripMcp)) {
        stripped.push({ kind: "mcp", name: serverLabel(ref) })
        return false
      }
      return true
    })
    if (kept.length !== body.mcp_servers.length) {
      changed = true
      if (kept.length === 0) removeMember("mcp_servers")
      else removeOthers()
    }
  }

  return changed ? { body: out, stripped, removals } : unchanged
}

/** `body` with the value at `path` replaced by `f` of it (or the key removed when `f` gives undefined); objects along the path copied. */
const replaceAt = (body: Json, path: ReadonlyArray<string>, f: (value: unknown) => unknown): Json => {
  const [key, ...rest] = path
  const out: Record<string, unknown> = { ...body }
  const next = rest.length === 0 ? f(body[key!]) : replaceAt(body[key!] as Json, rest, f)
  if (next === undefined) delete out[key!]
  else out[key!] = next
  return out
}

/** Kiro declares tools on its current message (`KIRO_TOOLS_PATH`); a list left empty is removed. */
const stripKiro = (body: Json, stripTools: ReadonlySet<string>): StripResult => {
  const list = valueAt(body, KIRO_TOOLS_PATH)
  if (!Array.isArray(list)) return unchanged
  const stripped: Array<Stripped> = []
  const removals: Array<Removal> = []
  const kept = list.filter((tool, index) => {
    const name = toolNameOf("kiro", tool)
    if (name === undefined || !stripTools.has(name)) return true
    stripped.push({ kind: "tool", name })
    removals.push({ path: [...KIRO_TOOLS_PATH, index], remove: true })
    return false
  })
  if (stripped.length === 0) return unchanged
  if (kept.length > 0) return { body: replaceAt(body, KIRO_TOOLS_PATH, () => kept), stripped, removals }
  return {
    body: replaceAt(body, KIRO_TOOLS_PATH, () => undefined),
    stripped,
    removals: [{ path: [...KIRO_TOOLS_PATH], remove: true }]
  }
}
