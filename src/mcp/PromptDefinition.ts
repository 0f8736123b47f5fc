import type { Schema } from "effect"
import type { ToolName, ToolParams } from "./ToolDefinitions.ts"

/** Argument schemas needing no service to decode (which keeps the registration's requirements known). */
export type PromptParameters = {
  readonly [name: string]: Schema.Struct.Fields[string] & {
    readonly DecodingServices: never
    readonly EncodingServices: never
  }
}

/** A prompt's arguments as its schemas decode them (what `McpServer.prompt` hands its content). */
export type PromptArgs<P extends PromptParameters> = Schema.Struct.Type<P>

/** One tool call grounding a prompt: a tool's name with arguments of that tool's own type. */
export type Grounding<N extends ToolName = ToolName> = {
  readonly [K in N]: readonly [tool: K, params: ToolParams<K>]
}[N]

/**
 * A prompt, typed by its own argument schemas where `prompt` defines it. `grounding` and
 * `instruction` are methods so that every prompt fits in one list (`PromptDefinition`, the
 * arguments' type left open: a method's parameter is compared both ways), which the server
 * registers by calling each with the arguments its own schemas decoded.
 */
export interface PromptDefinition<P extends PromptParameters = PromptParameters> {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly parameters: P
  /** Tool calls (name and arguments from the prompt's arguments) whose results ground the message. */
  grounding(args: PromptArgs<P>): ReadonlyArray<Grounding>
  instruction(args: PromptArgs<P>): string
  /** Values `completion/complete` offers per argument; an argument without any gets an empty list. */
  readonly suggestions?: { readonly [K in keyof P]?: ReadonlyArray<string> }
}

/** Defines a prompt: generic in its argument schemas, so `grounding` and `instruction` read the arguments as decoded. */
export const prompt = <const P extends PromptParameters>(d: PromptDefinition<P>) => d
