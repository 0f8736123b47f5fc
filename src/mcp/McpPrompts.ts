import { Effect, Layer } from "effect"
import { McpServer } from "effect/ai"
import { McpToolHandlers } from "./McpTools.ts"
import type { Grounding, PromptDefinition } from "./PromptDefinition.ts"
import { PROMPT_DEFINITIONS } from "./PromptDefinitions.ts"
import type { ToolName } from "./ToolDefinitions.ts"
import type { ToolHandlers } from "./VulnLookups.ts"

/** The length of one tool result inside a prompt: prompts stay small enough for any context. */
const GROUNDING_CHARS = 6000

/**
 * The server advertises `completions` (the library sets it), so every prompt argument
 * answers `completion/complete`: its suggested values starting with the input, or none.
 */
export const completeFrom = (values: ReadonlyArray<string>) => (input: string) =>
  Effect.succeed(values.filter((value) => value.toLowerCase().startsWith(input.trim().toLowerCase())))

/** One grounding call: the handler of the call's own tool, with arguments of that tool's type. */
const ground = <N extends ToolName>(handlers: ToolHandlers, [tool, params]: Grounding<N>) =>
  handlers[tool](params).pipe(
    Effect.map((r) => r.text),
    Effect.catchTag("ToolFailure", (e) => Effect.succeed(e.message)),
    Effect.map((text) =>
      `## ${tool}\n${text.length > GROUNDING_CHARS ? `${text.slice(0, GROUNDING_CHARS)}\n[truncated]` : text}`
    )
  )

/** Registers one prompt: its arguments, decoded by its schemas, are what its grounding and instruction read. */
const registerPrompt = (handlers: ToolHandlers, definition: PromptDefinition) =>
  McpServer.prompt({
    name: definition.name,
    title: definition.title,
    description: definition.description,
    parameters: definition.parameters,
    completion: Object.fromEntries(
      Object.keys(definition.parameters).map((name) => [name, completeFrom(definition.suggestions?.[name] ?? [])])
    ),
    content: (args) =>
      Effect.map(
        Effect.forEach(definition.grounding(args), (call) => ground(handlers, call)),
        (sections) => `Data from the vdb tools:\n\n${sections.join("\n\n")}\n\n${definition.instruction(args)}`
      )
  })

/**
 * Registers the 18 prompts. Each runs its grounding tools in process (with
 * the caller's organization) and returns one user message: the tool results,
 * then the instruction. A failing tool shows its agent-readable message in
 * place of its result, so the prompt still renders (e.g. an unknown identifier).
 */
export const McpPromptsLayer = Layer.unwrap(Effect.gen(function*() {
  const handlers = yield* McpToolHandlers
  const layers = PROMPT_DEFINITIONS.map((definition) => registerPrompt(handlers, definition))
  return Layer.mergeAll(...(layers as [typeof layers[number], ...typeof layers]))
}))
