import type { Surface } from "../../schema/GatewayRequest.ts"

/** Where a JSON value sits in the document: object keys and array indexes from the root. */
export type JsonPath = ReadonlyArray<string | number>

/** One inspected text: a JSON string value of the request and where it is. */
export interface Segment {
  readonly path: JsonPath
  readonly text: string
}

/**
 * One walker per surface. Each yields the text the guardrails inspect: system
 * prompts, message text, tool results (also those sent back on later turns),
 * and the tool definitions the model is shown (names, descriptions, parameter
 * schemas). The arguments a model generated for a tool call are never
 * yielded: they are the model's output, and rewriting them would corrupt the
 * call history.
 *
 * Where text is expected in a shape the walker does not know (a `messages`
 * that is a string, a `content` that is an object, a part that is a bare
 * string), every string inside it is yielded: a request the provider may
 * refuse is still forwarded, and nothing in it leaves uninspected.
 */
export const segmentsOf = (surface: Surface, parsed: unknown): Array<Segment> => {
  const out: Array<Segment> = []
  if (!isObject(parsed)) return out
  walkers[surface](parsed, out)
  return out
}

type Walker = (body: Record<string, unknown>, out: Array<Segment>) => void

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const text = (out: Array<Segment>, value: unknown, path: JsonPath) => {
  if (typeof value === "string") out.push({ path, text: value })
}

/** Every string value inside `value` (object keys are not text): what a shape the walker does not know holds. */
const allStrings = (out: Array<Segment>, value: unknown, path: JsonPath): void => {
  if (typeof value === "string") out.push({ path, text: value })
  else if (Array.isArray(value)) value.forEach((item, i) => allStrings(out, item, [...path, i]))
  else if (isObject(value)) for (const key of Object.keys(value)) allStrings(out, value[key], [...path, key])
}

/**
 * A string, or an array of parts whose `text` fields carry text (`text`, `input_text`, `output_text` parts).
 * Other parts (images, audio, files) carry no text to inspect; anything else (an object, a bare string
 * part) is read whole.
 */
const textOrParts = (out: Array<Segment>, value: unknown, path: JsonPath) => {
  if (typeof value === "string") {
    out.push({ path, text: value })
    return
  }
  if (value === null || value === undefined) return
  if (!Array.isArray(value)) return allStrings(out, value, path)
  value.forEach((part, j) => {
    if (isObject(part)) text(out, part.text, [...path, j, "text"])
    else allStrings(out, part, [...path, j])
  })
}

/** The tool definitions a request shows the model: every string in them (names, descriptions, schemas). */
const tools = (out: Array<Segment>, body: Record<string, unknown>) => allStrings(out, body.tools, ["tools"])

/** OpenAI chat completions: every message's content (system, developer, user, assistant, tool results). */
const chat: Walker = (body, out) => {
  tools(out, body)
  const messages = body.messages
  if (!Array.isArray(messages)) return allStrings(out, messages, ["messages"])
  messages.forEach((message, i) => {
    if (!isObject(message)) return allStrings(out, message, ["messages", i])
    // `tool_calls[].function.arguments` is deliberately not visited.
    textOrParts(out, message.content, ["messages", i, "content"])
    // A participant's name is shown to the model too.
    text(out, message.name, ["messages", i, "name"])
  })
}

/** OpenAI responses: `instructions`, and `input` as a string or items (messages and tool outputs). */
const responses: Walker = (body, out) => {
  tools(out, body)
  textOrParts(out, body.instructions, ["instructions"])
  const input = body.input
  if (typeof input === "string") {
    out.push({ path: ["input"], text: input })
    return
  }
  if (!Array.isArray(input)) return allStrings(out, input, ["input"])
  input.forEach((item, i) => {
    if (!isObject(item)) return allStrings(out, item, ["input", i])
    switch (item.type) {
      case "function_call_output":
      case "custom_tool_call_output":
      case "mcp_call":
        // Tool results; `function_call.arguments` (the model's) is not visited.
        textOrParts(out, item.output, ["input", i, "output"])
        return
      case undefined:
      case "message":
        textOrParts(out, item.content, ["input", i, "content"])
        return
    }
  })
}

/** Anthropic messages: `system`, each message's text blocks, and `tool_result` content; never `tool_use.input`. */
const messages: Walker = (body, out) => {
  tools(out, body)
  textOrParts(out, body.system, ["system"])
  const list = body.messages
  if (!Array.isArray(list)) return allStrings(out, list, ["messages"])
  list.forEach((message, i) => {
    if (!isObject(message)) return allStrings(out, message, ["messages", i])
    const content = message.content
    const path: JsonPath = ["messages", i, "content"]
    if (typeof content === "string") {
      out.push({ path, text: content })
      return
    }
    if (!Array.isArray(content)) return allStrings(out, content, path)
    content.forEach((block, j) => {
      if (!isObject(block)) return allStrings(out, block, [...path, j])
      if (block.type === "text") text(out, block.text, [...path, j, "text"])
      else if (block.type === "tool_result") textOrParts(out, block.content, [...path, j, "content"])
      else if (block.type === "document" && isObject(block.source) && block.source.type === "text") {
        text(out, block.source.data, [...path, j, "source", "data"])
      }
    })
  })
}

/** Kiro `conversationState`: the current message, the history, and tool results; never `toolUses[].input`. */
const kiro: Walker = (body, out) => {
  const state = body.conversationState
  if (!isObject(state)) return
  const userMessage = (value: unknown, path: JsonPath) => {
    if (!isObject(value)) return
    text(out, value.content, [...path, "content"])
    const context = value.userInputMessageContext
    if (!isObject(context)) return
    // The tool specifications the model is shown.
    allStrings(out, context.tools, [...path, "userInputMessageContext", "tools"])
    if (!Array.isArray(context.toolResults)) return
    context.toolResults.forEach((result, r) => {
      if (!isObject(result) || !Array.isArray(result.content)) return
      result.content.forEach((part, c) => {
        if (isObject(part)) {
          text(out, part.text, [...path, "userInputMessageContext", "toolResults", r, "content", c, "text"])
        }
      })
    })
  }
  if (isObject(state.currentMessage)) {
    userMessage(state.currentMessage.userInputMessage, ["conversationState", "currentMessage", "userInputMessage"])
  }
  if (!Array.isArray(state.history)) return
  state.history.forEach((entry, h) => {
    if (!isObject(entry)) return
    const at: JsonPath = ["conversationState", "history", h]
    userMessage(entry.userInputMessage, [...at, "userInputMessage"])
    if (isObject(entry.assistantResponseMessage)) {
      text(out, entry.assistantResponseMessage.content, [...at, "assistantResponseMessage", "content"])
    }
  })
}

const walkers: Record<Surface, Walker> = { chat, responses, messages, kiro }

/** `messages[2].content[0].text`: a location for violation details (never the text itself). */
export const formatPath = (path: JsonPath): string => {
  let out = ""
  for (const step of path) {
    if (typeof step === "number") out += `[${step}]`
    else out += out === "" ? step : `.${step}`
  }
  return out
}
