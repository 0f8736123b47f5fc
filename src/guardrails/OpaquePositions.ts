import type { Surface } from "../../schema/GatewayRequest.ts"

/**
 * What sits at an opaque position:
 * - `model-output`: the arguments the model itself generated for a tool call
 *   (spec 2: never scanned; rewriting them would corrupt the call history);
 * - `token`: a provider's own opaque string (a signature, encrypted content);
 * - `binary`: base64 bytes of a kind that is never text (audio, Kiro images);
 * - `base64-media`: base64 bytes typed by the sibling `media_type`;
 * - `media-url`: a URL; only a `data:` URL carries bytes, any other URL is text;
 * - `file-data`: a `data:` URL or bare base64, typed by the URL or the sibling `filename`.
 * The last three are opaque only for a media type that is not textual: text
 * (`text/*`, JSON, XML, CSV, …) is decoded and inspected (`EncodedText.ts`).
 */
export type Payload = "model-output" | "token" | "binary" | "base64-media" | "media-url" | "file-data"

/**
 * A place in a request's shape, as a provider's API reference documents it. Only
 * what is listed here can be opaque; everything else (unknown keys, extra fields
 * on a known part, a part of an unknown type, schemas) is walked as text.
 */
export interface Position {
  /** Members of an object at this place that lead to an opaque position. */
  readonly fields?: ReadonlyMap<string, Position>
  /** Every element of an array at this place. */
  readonly items?: Position
  /** Every member of a map (`prompt.variables`). */
  readonly members?: Position
  /** An object discriminated by this member (`type`, `role`): only the matching case applies. */
  readonly by?: string
  readonly cases?: ReadonlyMap<string, Position>
  /** The case of an object that lacks the discriminator (a Responses message without `type`). */
  readonly missing?: Position
  /** A value here is a payload of this kind. */
  readonly payload?: Payload
  /**
   * Every member name this place reads, in lower case: an object spelling one in another
   * case (`"Type"` beside `"type"`, read as the same member by a case-insensitive parser
   * upstream) has no opaque positions at all.
   */
  readonly folded: ReadonlySet<string>
  /** The same names as spelled. */
  readonly names: ReadonlySet<string>
}

const place = (spec: Omit<Position, "folded" | "names">, reads: ReadonlyArray<string> = []): Position => {
  const names = new Set<string>([...reads, ...(spec.fields?.keys() ?? []), ...(spec.by !== undefined ? [spec.by] : [])])
  return { ...spec, names, folded: new Set([...names].map((name) => name.toLowerCase())) }
}
const fields = (members: Record<string, Position>, reads?: ReadonlyArray<string>) =>
  place({ fields: new Map(Object.entries(members)) }, reads)
const list = (item: Position) => place({ items: item })
const by = (member: string, cases: Record<string, Position>, missing?: Position) =>
  place({ by: member, cases: new Map(Object.entries(cases)), ...(missing !== undefined ? { missing } : {}) })
const payload = (kind: Payload) => place({ payload: kind })

const MODEL_OUTPUT = payload("model-output")
const TOKEN = payload("token")
const BINARY = payload("binary")
const MEDIA_URL = payload("media-url")
const FILE_DATA = payload("file-data")

// OpenAI chat completions (platform.openai.com/docs/api-reference/chat/create).
const CHAT_USER_PART = by("type", {
  image_url: fields({ image_url: fields({ url: MEDIA_URL }) }),
  input_audio: fields({ input_audio: fields({ data: BINARY }) }),
  file: fields({ file: fields({ file_data: FILE_DATA }, ["filename"]) })
})
const CHAT_TOOL_CALL = by("type", {
  function: fields({ function: fields({ arguments: MODEL_OUTPUT }) }),
  custom: fields({ custom: fields({ input: MODEL_OUTPUT }) })
})
// OpenRouter's reasoning details, replayed on assistant messages (openrouter.ai/docs, reasoning tokens).
const CHAT_REASONING_DETAIL = by("type", {
  "reasoning.encrypted": fields({ data: TOKEN }),
  "reasoning.text": fields({ signature: TOKEN })
})
const CHAT: Position = fields({
  messages: list(by("role", {
    user: fields({ content: list(CHAT_USER_PART) }),
    assistant: fields({
      tool_calls: list(CHAT_TOOL_CALL),
      function_call: fields({ arguments: MODEL_OUTPUT }),
      reasoning_details: list(CHAT_REASONING_DETAIL)
    })
  }))
})

// OpenAI Responses (platform.openai.com/docs/api-reference/responses/create).
const RESPONSES_INPUT_PART = by("type", {
  input_image: fields({ image_url: MEDIA_URL }),
  input_file: fields({ file_data: FILE_DATA }, ["filename"]),
  input_audio: fields({ input_audio: fields({ data: BINARY }) })
})
const RESPONSES_MESSAGE = by("role", {
  user: fields({ content: list(RESPONSES_INPUT_PART) }),
  system: fields({ content: list(RESPONSES_INPUT_PART) }),
  developer: fields({ content: list(RESPONSES_INPUT_PART) })
})
const RESPONSES_OUTPUT = place({ items: RESPONSES_INPUT_PART })
const RESPONSES_ITEM = by("type", {
  message: RESPONSES_MESSAGE,
  function_call: fields({ arguments: MODEL_OUTPUT }),
  custom_tool_call: fields({ input: MODEL_OUTPUT }),
  local_shell_call: fields({ action: MODEL_OUTPUT }),
  computer_call: fields({ action: MODEL_OUTPUT }),
  mcp_call: fields({ arguments: MODEL_OUTPUT }),
  mcp_approval_request: fields({ arguments: MODEL_OUTPUT }),
  reasoning: fields({ encrypted_content: TOKEN }),
  image_generation_call: fields({ result: BINARY }),
  computer_call_output: fields({ output: by("type", { computer_screenshot: fields({ image_url: MEDIA_URL }) }) }),
  function_call_output: fields({ output: RESPONSES_OUTPUT }),
  custom_tool_call_output: fields({ output: RESPONSES_OUTPUT })
}, RESPONSES_MESSAGE)
const RESPONSES: Position = fields({
  input: list(RESPONSES_ITEM),
  prompt: fields({ variables: place({ members: RESPONSES_INPUT_PART }) })
})

// Anthropic messages and count_tokens (docs.anthropic.com/en/api/messages).
const BASE64_SOURCE = fields({ data: payload("base64-media") }, ["media_type"])
const IMAGE = fields({ source: by("type", { base64: BASE64_SOURCE }) })
const DOCUMENT = fields({
  source: by("type", { base64: BASE64_SOURCE, content: fields({ content: list(by("type", { image: IMAGE })) }) })
})
const TOOL_RESULT_CONTENT = list(by("type", { image: IMAGE, document: DOCUMENT }))
const CITATIONS = list(by("type", { web_search_result_location: fields({ encrypted_index: TOKEN }) }))
const MESSAGES_USER_BLOCK = by("type", {
  image: IMAGE,
  document: DOCUMENT,
  tool_result: fields({ content: TOOL_RESULT_CONTENT })
})
const MESSAGES_ASSISTANT_BLOCK = by("type", {
  text: fields({ citations: CITATIONS }),
  thinking: fields({ signature: TOKEN }),
  redacted_thinking: fields({ data: TOKEN }),
  tool_use: fields({ input: MODEL_OUTPUT }),
  server_tool_use: fields({ input: MODEL_OUTPUT }),
  mcp_tool_use: fields({ input: MODEL_OUTPUT }),
  mcp_tool_result: fields({ content: TOOL_RESULT_CONTENT }),
  web_search_tool_result: fields({
    content: list(by("type", { web_search_result: fields({ encrypted_content: TOKEN }) }))
  }),
  web_fetch_tool_result: fields({
    content: by("type", { web_fetch_result: fields({ content: by("type", { document: DOCUMENT }) }) })
  })
})
const MESSAGES: Position = fields({
  messages: list(by("role", {
    user: fields({ content: list(MESSAGES_USER_BLOCK) }),
    assistant: fields({ content: list(MESSAGES_ASSISTANT_BLOCK) })
  }))
})

// Kiro / CodeWhisperer generateAssistantResponse (the AWS SDK's codewhispererstreaming model).
const KIRO_MESSAGE = fields({
  userInputMessage: fields({ images: list(fields({ source: fields({ bytes: BINARY }) })) }),
  assistantResponseMessage: fields({ toolUses: list(fields({ input: MODEL_OUTPUT })) })
})
const KIRO: Position = fields({
  conversationState: fields({ currentMessage: KIRO_MESSAGE, history: list(KIRO_MESSAGE) })
})

/** The root of each surface's request: the only places where a string can be opaque. */
export const OPAQUE_POSITIONS: Readonly<Record<Surface, Position>> = {
  chat: CHAT,
  responses: RESPONSES,
  messages: MESSAGES,
  kiro: KIRO
}

/**
 * The place that applies to an object found at `position` (its case, for a
 * discriminated one), or `undefined` when none does (its type or role is not
 * one listed). `MISSPELLED` when the object spells a member this place reads
 * in another letter case (`"Type"` beside `"type"`): a parser upstream that
 * matches names in any case could read it as another part, so the request is
 * refused rather than guessed at.
 */
export const placeOf = (
  position: Position,
  value: Record<string, unknown>,
  keys: ReadonlyArray<string>
): Position | undefined => {
  let at: Position | undefined = position
  while (at !== undefined) {
    if (misspells(at, keys)) return MISSPELLED
    if (at.by === undefined) return at
    const tag: unknown = value[at.by]
    at = tag === undefined ? at.missing : typeof tag === "string" ? at.cases!.get(tag) : undefined
  }
  return undefined
}

export const MISSPELLED: Position = place({})

const misspells = (position: Position, keys: ReadonlyArray<string>): boolean => {
  for (const key of keys) if (!position.names.has(key) && position.folded.has(key.toLowerCase())) return true
  return false
}
