import { Console } from "effect"
import { Command, Flag } from "effect/cli"
import { type EntryInfo, promptCatalog, toolCatalog } from "../mcp/McpCatalog.ts"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print machine-readable JSON"), Flag.withDefault(false))

const print = (entries: ReadonlyArray<EntryInfo>, asJson: boolean) =>
  asJson
    ? Console.log(JSON.stringify(entries, null, 2))
    : Console.log(
      entries.map((e) => {
        const args = e.arguments.map((a) => `${a.name}${a.required ? "" : "?"}: ${a.type}`).join(", ")
        return `${e.name}(${args})\n    ${e.description}`
      }).join("\n")
    )

const tools = Command.make("tools", { json }, (input) => print(toolCatalog(), input.json)).pipe(
  Command.withDescription("List the MCP server's tools with their arguments (what POST /mcp exposes)")
)

const prompts = Command.make("prompts", { json }, (input) => print(promptCatalog(), input.json)).pipe(
  Command.withDescription("List the MCP server's prompts with their arguments")
)

/** `vdb mcp tools|prompts`: for people wiring an agent to the MCP service by hand; needs no server. */
export const mcpCommand = Command.make("mcp").pipe(
  Command.withDescription("The MCP endpoint's tools and prompts"),
  Command.withSubcommands([tools, prompts])
)
