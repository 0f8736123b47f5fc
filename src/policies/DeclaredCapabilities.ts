import type { Surface } from "../../schema/GatewayRequest.ts"

/**
 * What a request body declares that policy can judge: tools, MCP servers and
 * skills, per surface, and which tools the conversation already used. Only
 * reads the parsed body; `ToolStrip.ts` rewrites it.
 */

type Json = Readonly<Record<string, unknown>>

export interface McpServerRef {
  readonly name: string | undefined
  /** The URL as sent; compare it only through `canonicalMcpUrl` (McpServerUrl.ts). */
  readonly url: string | undefined
  /** The entry has a URL field that is not a non-empty string: a server nobody can tell apart. */
  readonly badUrl: boolean
}

export interface SkillRef {
  readonly id: string | undefined
  readonly name: string | undefined
}

export interface Declared {
  readonly tools: ReadonlyArray<string>
  readonly mcpServers: ReadonlyArray<McpServerRef>
  readonly skills: ReadonlyArray<SkillRef>
}

export const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export const arrayOf = (value: unknown): ReadonlyArray<unknown> => Array.isArray(value) ? value : []

const str = (value: unknown): string | undefined => typeof value === "string" && value !== "" ? value : undefined

/** Where a Kiro request declares its tools: on the current message's context. */
export const KIRO_TOOLS_PATH = [
  "conversationState",
  "currentMessage",
  "userInputMessage",
  "userInputMessageContext",
  "tools"
] as const

/** The value at `path` in a parsed body, through objects only. */
export const valueAt = (body: unknown, path: ReadonlyArray<string>): unknown =>
  path.reduce<unknown>((node, key) => isObject(node) ? node[key] : undefined, body)

/** The list of tool entries a request declares: `tools`, or Kiro's on its current message. */
export const toolListOf = (surface: Surface, body: Json): unknown =>
  surface === "kiro" ? valueAt(body, KIRO_TOOLS_PATH) : body.tools

/** A tool entry's name, or undefined for an MCP entry (judged as an MCP server) or an unnamed one. */
export const toolNameOf = (surface: Surface, tool: unknown): string | undefined => {
  if (!isObject(tool)) return undefined
  switch (surface) {
    case "chat":
      // By its type first, as the provider reads it: a `custom` tool carrying a `function` object
      // too is judged by the custom tool's name, not by the decoy's.
      if (tool.type === "custom") return isObject(tool.custom) ? str(tool.custom.name) : str(tool.name)
      if (isObject(tool.function)) return str(tool.function.name)
      if (isObject(tool.custom)) return str(tool.custom.name)
      return str(tool.name)
    case "responses":
      // Built-in tools (web_search, file_search, code_interpreter, ...) have no name: their type is the name.
      if (tool.type === "mcp") return undefined
      return str(tool.name) ?? str(tool.type)
    case "messages":
      if (tool.type === "mcp_toolset") return undefined
      return str(tool.name)
    case "kiro":
      return isObject(tool.toolSpecification) ? str(tool.toolSpecification.name) : undefined
    default:
      return undefined
  }
}

/** An MCP server named by a tools entry (responses `type: "mcp"`, messages `mcp_toolset`), or undefined. */
export const mcpOfTool = (surface: Surface, tool: unknown): McpServerRef | undefined => {
  if (!isObject(tool)) return undefined
  if (surface === "responses" && tool.type === "mcp") return serverRef(str(tool.server_label), tool, "server_url")
  if (surface === "messages" && tool.type === "mcp_toolset") {
    return { name: str(tool.mcp_server_name), url: undefined, badUrl: false }
  }
  return undefined
}

const serverRef = (name: string | undefined, holder: Json, key: string): McpServerRef => {
  const present = Object.hasOwn(holder, key)
  const url = str(holder[key])
  return { name, url, badUrl: present && url === undefined }
}

export const mcpOfServer = (server: unknown): McpServerRef | undefined =>
  isObject(server) ? serverRef(str(server.name), server, "url") : undefined

export const declaredOf = (surface: Surface, body: Json): Declared => {
  const tools: Array<string> = []
  const mcpServers: Array<McpServerRef> = []
  const skills: Array<SkillRef> = []
  for (const tool of arrayOf(toolListOf(surface, body))) {
    const name = toolNameOf(surface, tool)
    if (name !== undefined) tools.push(name)
    const mcp = mcpOfTool(surface, tool)
    if (mcp !== undefined) mcpServers.push(mcp)
  }
  if (surface === "chat") {
    // The deprecated `functions` field declares tools too.
    for (const fn of arrayOf(body.functions)) {
      if (isObject(fn) && str(fn.name) !== undefined) tools.push(fn.name as string)
    }
  }
  if (surface === "messages") {
    for (const server of arrayOf(body.mcp_servers)) {
      const ref = mcpOfServer(server)
      if (ref !== undefined) mcpServers.push(ref)
    }
    if (isObject(body.container)) {
      for (const skill of arrayOf(body.container.skills)) {
        if (isObject(skill)) skills.push({ id: str(skill.skill_id), name: str(skill.name) })
      }
    }
  }
  return { tools, mcpServers, skills }
}

export interface History {
  /** Tool names the conversation already called. */
  readonly tools: ReadonlySet<string>
  /** MCP servers (name) the conversation already called. */
  readonly mcpServers: ReadonlySet<string>
}

/** The tool calls already in the conversation: stripping one of those tools would orphan its call. */
export const historyOf = (surface: Surface, body: Json): History => {
  const tools = new Set<string>()
  const mcpServers = new Set<string>()
  const addName = (value: unknown) => {
    const name = str(value)
    if (name !== undefined) tools.add(name)
  }
  switch (surface) {
    case "chat":
      for (const message of arrayOf(body.messages)) {
        if (!isObject(message)) continue
        for (const call of arrayOf(message.tool_calls)) {
          if (!isObject(call)) continue
          if (isObject(call.function)) addName(call.function.name)
          if (isObject(call.custom)) addName(call.custom.name)
        }
        if (isObject(message.function_call)) addName(message.function_call.name)
      }
      break
    case "responses":
      for (const item of arrayOf(body.input)) {
        if (!isObject(item)) continue
        if (item.type === "function_call" || item.type === "custom_tool_call") addName(item.name)
        if (item.type === "mcp_call" || item.type === "mcp_approval_request" || item.type === "mcp_list_tools") {
          const server = str(item.server_label)
          if (server !== undefined) mcpServers.add(server)
        }
      }
      break
    case "messages":
      for (const message of arrayOf(body.messages)) {
        if (!isObject(message)) continue
        for (const block of arrayOf(message.content)) {
          if (!isObject(block)) continue
          if (block.type === "tool_use" || block.type === "server_tool_use") addName(block.name)
          if (block.type === "mcp_tool_use") {
            const server = str(block.server_name)
            if (server !== undefined) mcpServers.add(server)
          }
        }
      }
      break
    case "kiro":
      // The calls the model made are the assistant turns' `toolUses`.
      for (const turn of arrayOf(valueAt(body, ["conversationState", "history"]))) {
        for (const use of arrayOf(valueAt(turn, ["assistantResponseMessage", "toolUses"]))) {
          if (isObject(use)) addName(use.name)
        }
      }
      break
  }
  return { tools, mcpServers }
}
