import type { Surface } from "../../schema/GatewayRequest.ts"

/** Where a JSON value sits in the document: object keys and array indexes from the root. */
export type JsonPath = ReadonlyArray<string | number>

/** One inspected text: a JSON string value of the request (or an object key) and where it is. */
export interface Segment {
  readonly path: JsonPath
  readonly text: string
  /**
   * The text is an object key (a property name in a tool's parameter schema, say), not a value:
   * it can be matched but not rewritten in place, so a redaction rule that matches it refuses
   * the request instead (`Evaluation.ts`).
   */
  readonly key?: true
}

/**
 * Every string of a request is text the guardrails inspect, wherever it sits,
 * except what the model is not shown as text or what must reach the provider
 * untouched:
 * - the arguments a model generated for a tool call (`arguments`, and the
 *   `input` of `tool_use`, `server_tool_use`, `mcp_tool_use`, a Responses
 *   `custom_tool_call` or a Kiro `toolUses` entry; the `action` of a
 *   `local_shell_call` or `computer_call`): the model's output, which
 *   rewriting would corrupt in the call history (spec 2);
 * - media: base64 sources, `image_url`, `input_audio`, `file_data`, `audio`,
 *   opaque reasoning (`signature`, `encrypted_content`, `redacted_thinking`);
 * - the top-level `model`, `metadata` and `user` (the provider reads them,
 *   the model is not shown them);
 * - identifiers and enumerations (`id`, `call_id`, `tool_call_id`,
 *   `tool_use_id`, `type`, `role`, `status`, …), which carry no free text.
 *
 * Listing what the model reads instead missed fields the providers keep
 * adding (tool results holding documents, `prediction`, `response_format`
 * schemas, `prompt.variables`, search results, thinking blocks, citations):
 * the key went upstream in each. Object keys inside tool and output schemas
 * (`tools`, `functions`, `response_format`, `text.format`, and each
 * surface's schema fields) are text the model reads too, and are yielded
 * with `key: true`.
 */
export const segmentsOf = (surface: Surface, parsed: unknown): Array<Segment> => {
  const out: Array<Segment> = []
  if (!isObject(parsed)) return out
  for (const key of Object.keys(parsed)) {
    if (TOP_LEVEL_UNSEEN.has(key)) continue
    walk(out, parsed[key], { parent: undefined, step: key, depth: 1 }, key, parsed, SCHEMA_ROOTS.has(key) || (surface === "responses" && key === "text"))
  }
  return out
}

/** A location as a chain up to the root: a walk shares its prefixes instead of copying them at every step. */
interface PathNode {
  readonly parent: PathNode | undefined
  readonly step: string | number
  readonly depth: number
}

/**
 * A segment whose path is built only when asked for (an edit, a violation's location): a body
 * nested a hundred levels with 200,000 strings at the bottom took 281 ms when every segment
 * carried its own copy of the path.
 */
class WalkedSegment implements Segment {
  readonly text: string
  readonly key?: true
  private readonly node: PathNode
  constructor(node: PathNode, text: string, key: boolean) {
    this.node = node
    this.text = text
    if (key) this.key = true
  }
  get path(): JsonPath {
    const out = new Array<string | number>(this.node.depth)
    let node: PathNode | undefined = this.node
    for (let i = this.node.depth - 1; i >= 0 && node !== undefined; i--, node = node.parent) out[i] = node.step
    return out
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Read by the provider, not shown to the model. */
const TOP_LEVEL_UNSEEN: ReadonlySet<string> = new Set(["model", "metadata", "user"])

/** Where schemas the model reads live: their property names are text. */
const SCHEMA_ROOTS: ReadonlySet<string> = new Set(["tools", "functions", "response_format"])

/** Strings that are identifiers or enumerations anywhere: nothing free-form to inspect, and nothing to rewrite. */
const IDENTIFIER_KEYS: ReadonlySet<string> = new Set([
  "id",
  "call_id",
  "tool_call_id",
  "tool_use_id",
  "toolUseId",
  "previous_response_id",
  "conversationId",
  "type",
  "role",
  "status",
  "media_type",
  "detail",
  "service_tier",
  "prompt_cache_key",
  "safety_identifier",
  "reasoning_effort",
  "chatTriggerType",
  "origin",
  "modelId"
])

/** Values never inspected wherever they appear: media, opaque reasoning, the model's own tool-call arguments. */
const UNSEEN_KEYS: ReadonlySet<string> = new Set([
  "arguments",
  "image_url",
  "input_audio",
  "file_data",
  "file_id",
  "audio",
  "bytes",
  "signature",
  "encrypted_content"
])

/** Objects whose every string is opaque to the model. */
const OPAQUE_TYPES: ReadonlySet<string> = new Set(["base64", "redacted_thinking", "image", "input_image", "input_file"])

/** Object types whose `input` is a tool call the model generated. */
const TOOL_CALL_TYPES: ReadonlySet<string> = new Set(["tool_use", "server_tool_use", "mcp_tool_use", "custom_tool_call"])

/** Object types whose `action` is a tool call the model generated. */
const ACTION_CALL_TYPES: ReadonlySet<string> = new Set(["local_shell_call", "computer_call"])

/** Arrays whose items are tool calls a model made (Kiro's `toolUses`): an item's `input` is its arguments. */
const TOOL_CALL_LISTS: ReadonlySet<string> = new Set(["toolUses"])

/** Where a schema starts: below it, property names are text the model reads. */
const SCHEMA_KEYS: ReadonlySet<string> = new Set(["tools", "schema", "input_schema", "inputSchema", "parameters", "json_schema"])

/** Whether `key` of `parent` holds what the model generated or cannot read. */
const unseen = (key: string, parent: Record<string, unknown>, toolCall: boolean): boolean => {
  if (UNSEEN_KEYS.has(key)) return true
  const type = typeof parent.type === "string" ? parent.type : undefined
  if (key === "input") return toolCall || (type !== undefined && TOOL_CALL_TYPES.has(type))
  if (key === "action") return type !== undefined && ACTION_CALL_TYPES.has(type)
  return false
}

/**
 * Past this depth nothing is walked, so no body can exhaust the stack. `GuardrailEngine` refuses a
 * body nested deeper than `MAX_INSPECTED_DEPTH` (128) before it reads segments.
 */
const MAX_WALK_DEPTH = 256

/** Depth-first over one value. */
const walk = (
  out: Array<Segment>,
  value: unknown,
  at: PathNode,
  key: string | number,
  parent: Record<string, unknown> | ReadonlyArray<unknown>,
  inSchema: boolean,
  toolCall = false
): void => {
  if (at.depth > MAX_WALK_DEPTH) return
  if (typeof value === "string") {
    if (typeof key === "string" && !Array.isArray(parent) && IDENTIFIER_KEYS.has(key)) return
    out.push(new WalkedSegment(at, value, false))
    return
  }
  if (Array.isArray(value)) {
    const calls = typeof key === "string" && TOOL_CALL_LISTS.has(key)
    for (let i = 0; i < value.length; i++) walk(out, value[i], { parent: at, step: i, depth: at.depth + 1 }, i, value, inSchema, calls)
    return
  }
  if (!isObject(value)) return
  if (typeof value.type === "string" && OPAQUE_TYPES.has(value.type)) return
  for (const child of Object.keys(value)) {
    if (unseen(child, value, toolCall)) continue
    const node: PathNode = { parent: at, step: child, depth: at.depth + 1 }
    if (inSchema) out.push(new WalkedSegment(node, child, true))
    walk(out, value[child], node, child, value, inSchema || SCHEMA_KEYS.has(child))
  }
}

/**
 * Field names of the providers' request shapes: shown as they are in a location. Any other key
 * (a property a client named in a tool schema, an object key holding anything) is shown as `*`,
 * so a violation's detail never repeats text the client chose.
 */
const SHAPE_KEYS: ReadonlySet<string> = new Set([
  "messages", "content", "text", "name", "tools", "functions", "function", "parameters", "properties", "items",
  "description", "input_schema", "schema", "system", "instructions", "input", "output", "source", "data", "title",
  "context", "refusal", "prediction", "response_format", "json_schema", "format", "prompt", "variables", "summary",
  "thinking", "citations", "cited_text", "conversationState", "currentMessage", "history", "userInputMessage",
  "userInputMessageContext", "toolResults", "assistantResponseMessage", "tool_calls", "enum", "anyOf", "oneOf",
  "allOf", "required", "default", "examples", "const", "$defs", "definitions", "url", "query", "results",
  "toolSpecification", "inputSchema", "json", "tool_result", "document", "search_result", "context"
])

/** `messages[2].content[0].text`: a location for violation details (never the text itself, nor a key the client chose). */
export const formatPath = (path: JsonPath): string => {
  let out = ""
  for (const step of path) {
    if (typeof step === "number") out += `[${step}]`
    else {
      const shown = SHAPE_KEYS.has(step) ? step : "*"
      out += out === "" ? shown : `.${shown}`
    }
  }
  return out
}
