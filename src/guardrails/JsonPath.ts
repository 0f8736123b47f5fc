import { FIELD_NAMES } from "./ProviderFieldNames.ts"

/** Where a JSON value sits in the document: object keys and array indexes from the root. */
export type JsonPath = ReadonlyArray<string | number>

/**
 * Field names of the providers' request shapes: shown as they are in a location. Any other key
 * (a property a client named in a tool schema, an object key holding anything) is shown as `*`,
 * so a violation's detail never repeats text the client chose.
 */
const SHAPE_KEYS: ReadonlySet<string> = new Set([
  "messages",
  "content",
  "text",
  "name",
  "tools",
  "functions",
  "function",
  "parameters",
  "properties",
  "items",
  "description",
  "input_schema",
  "schema",
  "system",
  "instructions",
  "input",
  "output",
  "source",
  "data",
  "title",
  "context",
  "refusal",
  "prediction",
  "response_format",
  "json_schema",
  "format",
  "prompt",
  "variables",
  "summary",
  "thinking",
  "citations",
  "cited_text",
  "conversationState",
  "currentMessage",
  "history",
  "userInputMessage",
  "userInputMessageContext",
  "toolResults",
  "assistantResponseMessage",
  "tool_calls",
  "enum",
  "anyOf",
  "oneOf",
  "allOf",
  "required",
  "default",
  "examples",
  "const",
  "$defs",
  "definitions",
  "url",
  "query",
  "results",
  "toolSpecification",
  "inputSchema",
  "json",
  "tool_result",
  "document",
  "search_result",
  "context"
])

/** `messages[2].content[0].text`: a location for violation details (never the text itself, nor a key the client chose). */
export const formatPath = (path: JsonPath): string => {
  let out = ""
  for (const step of path) {
    if (typeof step === "number") out += `[${step}]`
    else {
      const shown = SHAPE_KEYS.has(step) || FIELD_NAMES.has(step) ? step : "*"
      out += out === "" ? shown : `.${shown}`
    }
  }
  return out
}
