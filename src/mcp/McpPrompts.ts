import { Effect, Layer } from "effect"
import { McpServer } from "effect/ai"
import type { McpCaller } from "./McpCaller.ts"
import { McpToolHandlers } from "./McpTools.ts"
import { PROMPT_DEFINITIONS } from "./PromptDefinitions.ts"
import type { ToolFailure, ToolResult } from "./ToolKit.ts"

/** The length of one tool result inside a prompt: prompts stay small enough for any context. */
const GROUNDING_CHARS = 6000

/** A tool handler called with arguments no tool schema decoded (see `McpPromptsLayer`). */
type UngroundedHandler = (
  params: Readonly<Record<string, unknown>>
) => Effect.Effect<ToolResult, ToolFailure, McpCaller>

/**
 * The server advertises `completions` (the library sets it), so every prompt argument
 * answers `completion/complete`: its suggested values starting with the input, or none.
 */
export const completeFrom = (values: ReadonlyArray<string>) => (input: string) =>
  Effect.succeed(values.filter((value) => value.toLowerCase().startsWith(input.trim().toLowerCase())))

/**
 * Registers the 18 prompts. Each runs its grounding tools in process (with
 * the caller's organization) and returns one user message: the tool results,
 * then the instruction. A failing tool shows its agent-readable message in
 * place of its result, so the prompt still renders (e.g. an unknown identifier).
 */
export const McpPromptsLayer = Layer.unwrap(Effect.gen(function*() {
  // A prompt grounds on its own arguments (strings its schema decoded), not on what each tool's
  // schema decodes, so it calls the handlers by name with plain records; the handlers check the
  // identifiers they are given (`identify` takes any value) and the prompts pass limits in range.
  const handlers = (yield* McpToolHandlers) as unknown as Readonly<Record<string, UngroundedHandler>>
  const layers = PROMPT_DEFINITIONS.map((definition) =>
    McpServer.prompt({
      name: definition.name,
      title: definition.title,
      description: definition.description,
      parameters: definition.parameters,
      completion: Object.fromEntries(
        Object.keys(definition.parameters).map((name) => [name, completeFrom(definition.suggestions?.[name] ?? [])])
      ),
      content: (args) =>
        Effect.gen(function*() {
          const values = args as Record<string, string | undefined>
          const sections = yield* Effect.forEach(definition.grounding(values), ([tool, params]) =>
            handlers[tool]!(params).pipe(
              Effect.map((r) => r.text),
              Effect.catchTag("ToolFailure", (e) =>
                Effect.succeed(e.message)),
              Effect.map((text) =>
                `## ${tool}\n${text.length > GROUNDING_CHARS ? `${text.slice(0, GROUNDING_CHARS)}\n[truncated]` : text}`
              )
            ))
          return `Data from the vdb tools:\n\n${sections.join("\n\n")}\n\n${definition.instruction(values)}`
        })
    })
  )
  return Layer.mergeAll(...(layers as [typeof layers[number], ...typeof layers]))
}))
