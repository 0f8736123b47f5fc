import fc from "fast-check"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { send } from "../http.ts"
import { type KiroGateway, ORG as KIRO_ORG, SERVICE_KEY as KIRO_KEY } from "../kiro/harness.ts"
import { type FirewallGateway, ORG, run, SERVICE_KEY } from "./harness.ts"
import { type Gateways, startGateways } from "./withKiro.ts"

/**
 * Issue 32, "Checks": for each surface, a secret planted at a random position of a random,
 * realistic request (schemas, unknown keys, extra part fields, mismatched types, URLs, file
 * names, textual documents) never reaches the stub provider, except at a documented opaque
 * position. The opaque positions below are this test's own copy, written from the providers'
 * API references, not imported from src/guardrails/OpaquePositions.ts: a change to either
 * shows in the other.
 */
const SECRET = "AKIAQWERTYUIOPASDFGH"
const BLOCK = { name: "aws-keys", rule_type: "blocked_pattern", pattern: "AKIA[0-9A-Z]{16}" } as const
const REDACT = { name: "aws-redact", rule_type: "pii_redact", pattern: "AKIA[0-9A-Z]{16}" } as const
const RUNS = 60

type Json = null | boolean | number | string | Array<Json> | { [key: string]: Json }
type Path = ReadonlyArray<string | number>
type Surface = "chat" | "responses" | "messages" | "count_tokens" | "kiro"

// ---------------------------------------------------------------- the test's own opaque positions

const TEXTUAL =
  /^(?:text\/[^/]+|[^/]+\/(?:[^/]*\+)?(?:json|xml|csv|x-ndjson|ndjson|jsonl|yaml|x-yaml|javascript|x-javascript|ecmascript|x-sh|sql|toml|markdown))$/
const TEXT_FILES =
  /\.(?:txt|text|md|markdown|csv|tsv|json|jsonl|ndjson|xml|html?|ya?ml|toml|ini|cfg|conf|log|sql|sh|m?js|ts|py|rb|go|rs|java|c|h|cpp|cs|php|css|svg|tex|rst|env)$/i
const textual = (mediaType: unknown) =>
  typeof mediaType === "string" && TEXTUAL.test(mediaType.split(";")[0]!.trim().toLowerCase())

/**
 * What sits at a place: an opaque payload (never read), a payload the provider decodes into
 * text the model reads (`decoded`), or nothing special (`false`: text as it is).
 */
type Kind = "opaque" | "decoded" | false

/** A `data:` URL: base64 bytes that are not text are opaque, text is decoded; any other URL is text. */
const dataUrl = (value: unknown): Kind => {
  if (typeof value !== "string" || !/^data:/i.test(value) || value.indexOf(",") < 0) return false
  const header = value.slice(5, value.indexOf(","))
  const base64 = /;\s*base64\s*$/i.test(header)
  const type = header.replace(/;\s*base64\s*$/i, "")
  if (textual(type.trim() === "" || type.trim().startsWith(";") ? "text/plain" : type)) return "decoded"
  return base64 ? "opaque" : false
}
const fileData = (value: unknown, filename: unknown): Kind =>
  typeof value !== "string"
    ? false
    : /^data:/i.test(value)
    ? dataUrl(value)
    : typeof filename === "string" && TEXT_FILES.test(filename)
    ? "decoded"
    : "opaque"
const str = (value: unknown, kind: Kind): Kind => typeof value === "string" ? kind : false
const obj = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {}

/** What the value (or subtree: the model's own output) at `path` is; `at(d)` is the value at its first d steps. */
type Rule = (path: Path, at: (depth: number) => unknown) => Kind

const chatPart: (p: number) => Rule = (p) => (path, at) => {
  const part = obj(at(p)), rest = path.slice(p).join("."), leaf = at(path.length)
  if (part.type === "image_url") return rest === "image_url.url" && dataUrl(leaf)
  if (part.type === "input_audio") return rest === "input_audio.data" && str(leaf, "opaque")
  if (part.type === "file") return rest === "file.file_data" && fileData(leaf, obj(part.file).filename)
  return false
}

const responsesPart: (p: number) => Rule = (p) => (path, at) => {
  const part = obj(at(p)), rest = path.slice(p).join("."), leaf = at(path.length)
  if (part.type === "input_image") return rest === "image_url" && dataUrl(leaf)
  if (part.type === "input_file") return rest === "file_data" && fileData(leaf, part.filename)
  if (part.type === "input_audio") return rest === "input_audio.data" && str(leaf, "opaque")
  return false
}

const anthropicSource = (p: number): Rule => (path, at) => {
  const block = obj(at(p)), source = obj(block.source), rest = path.slice(p)
  if (block.type !== "image" && block.type !== "document") return false
  if (source.type === "base64") {
    return rest.join(".") === "source.data" && str(at(path.length), textual(source.media_type) ? "decoded" : "opaque")
  }
  if (
    block.type === "document" && source.type === "content" && rest[0] === "source" && rest[1] === "content" &&
    typeof rest[2] === "number"
  ) {
    return obj(at(p + 3)).type === "image" && anthropicSource(p + 3)(path, at)
  }
  return false
}

const anthropicResultContent = (p: number): Rule => (path, at) =>
  typeof path[p] === "number" && anthropicSource(p + 1)(path, at)

const MODEL_OUTPUT: Record<string, string> = {
  function_call: "arguments",
  custom_tool_call: "input",
  local_shell_call: "action",
  computer_call: "action",
  mcp_call: "arguments",
  mcp_approval_request: "arguments"
}

const RULES: Record<Surface, Rule> = {
  chat: (path, at) => {
    if (path[0] !== "messages" || typeof path[1] !== "number") return false
    const message = obj(at(2))
    if (message.role === "user") return path[2] === "content" && typeof path[3] === "number" && chatPart(4)(path, at)
    if (message.role !== "assistant") return false
    if (path[2] === "tool_calls" && typeof path[3] === "number") {
      const call = obj(at(4))
      return ((call.type === "function" && path[4] === "function" && path[5] === "arguments") ||
        (call.type === "custom" && path[4] === "custom" && path[5] === "input")) && "opaque"
    }
    if (path[2] === "function_call") return path[3] === "arguments" && "opaque"
    if (path[2] === "reasoning_details" && typeof path[3] === "number" && path.length === 5) {
      const detail = obj(at(4))
      return ((detail.type === "reasoning.encrypted" && path[4] === "data") ||
        (detail.type === "reasoning.text" && path[4] === "signature")) &&
        str(at(5), "opaque")
    }
    return false
  },
  responses: (path, at) => {
    if (path[0] === "prompt" && path[1] === "variables" && path.length > 3) return responsesPart(3)(path, at)
    if (path[0] !== "input" || typeof path[1] !== "number") return false
    const item = obj(at(2)), rest = path.slice(2), leaf = at(path.length), type = item.type as string
    if (item.type === undefined || item.type === "message") {
      return ["user", "system", "developer"].includes(item.role as string) && rest[0] === "content" &&
        typeof rest[1] === "number" &&
        responsesPart(4)(path, at)
    }
    if (Object.hasOwn(MODEL_OUTPUT, type)) return rest[0] === MODEL_OUTPUT[type] && "opaque"
    if (type === "reasoning") return rest.join(".") === "encrypted_content" && str(leaf, "opaque")
    if (type === "image_generation_call") return rest.join(".") === "result" && str(leaf, "opaque")
    if (type === "computer_call_output") {
      return obj(item.output).type === "computer_screenshot" && rest.join(".") === "output.image_url" && dataUrl(leaf)
    }
    if (type === "function_call_output" || type === "custom_tool_call_output") {
      return rest[0] === "output" && typeof rest[1] === "number" && responsesPart(4)(path, at)
    }
    return false
  },
  messages: (path, at) => {
    if (path[0] !== "messages" || typeof path[1] !== "number" || path[2] !== "content" || typeof path[3] !== "number") {
      return false
    }
    const role = obj(at(2)).role, block = obj(at(4)), rest = path.slice(4), leaf = at(path.length)
    if (role === "user") {
      if (block.type === "image" || block.type === "document") return anthropicSource(4)(path, at)
      if (block.type === "tool_result") return rest[0] === "content" && anthropicResultContent(5)(path, at)
      return false
    }
    if (role !== "assistant") return false
    switch (block.type) {
      case "thinking":
        return rest.join(".") === "signature" && str(leaf, "opaque")
      case "redacted_thinking":
        return rest.join(".") === "data" && str(leaf, "opaque")
      case "tool_use":
      case "server_tool_use":
      case "mcp_tool_use":
        return rest[0] === "input" && "opaque"
      case "mcp_tool_result":
        return rest[0] === "content" && anthropicResultContent(5)(path, at)
      case "text":
        return rest[0] === "citations" && typeof rest[1] === "number" &&
          obj(at(6)).type === "web_search_result_location" &&
          rest[2] === "encrypted_index" && rest.length === 3 && str(leaf, "opaque")
      case "web_search_tool_result":
        return rest[0] === "content" && typeof rest[1] === "number" && obj(at(6)).type === "web_search_result" &&
          rest[2] === "encrypted_content" && rest.length === 3 && str(leaf, "opaque")
      case "web_fetch_tool_result":
        return rest[0] === "content" && obj(at(5)).type === "web_fetch_result" && rest[1] === "content" &&
          obj(at(6)).type === "document" && anthropicSource(6)(path, at)
    }
    return false
  },
  count_tokens: (path, at) => RULES.messages(path, at),
  kiro: (path, at) => {
    if (path[0] !== "conversationState") return false
    const message = path[1] === "currentMessage" ? 2 : path[1] === "history" && typeof path[2] === "number" ? 3 : -1
    if (message < 0) return false
    const rest = path.slice(message)
    if (rest[0] === "userInputMessage" && rest[1] === "images" && typeof rest[2] === "number") {
      return rest.slice(3).join(".") === "source.bytes" && str(at(path.length), "opaque")
    }
    return rest[0] === "assistantResponseMessage" && rest[1] === "toolUses" && typeof rest[2] === "number" &&
      rest[3] === "input" && "opaque"
  }
}

/** What lies at `path` of `body` (a subtree of the model's output counts from its root). */
const kindAt = (surface: Surface, body: Json, path: Path): Kind => {
  const at = (depth: number) => {
    let node: unknown = body
    for (let i = 0; i < depth; i++) node = (node as any)?.[path[i]!]
    return node
  }
  for (let depth = 1; depth <= path.length; depth++) {
    const kind = RULES[surface](path.slice(0, depth), at)
    if (kind === "opaque" || (kind === "decoded" && depth === path.length)) return kind
  }
  return false
}

/** The text a provider decodes from a payload. */
const decoded = (value: string): string => {
  const comma = value.indexOf(",")
  if (!/^data:/i.test(value)) return Buffer.from(value, "base64").toString("utf8")
  const payload = value.slice(comma + 1)
  if (/;\s*base64\s*$/i.test(value.slice(0, comma))) return Buffer.from(payload, "base64").toString("utf8")
  try {
    return decodeURIComponent(payload)
  } catch {
    return payload
  }
}

/** Whether the model (or whoever a URL reaches) could read the secret in this value at this place. */
const readable = (surface: Surface, body: Json, path: Path, value: Json): boolean => {
  const kind = kindAt(surface, body, path)
  if (kind === "opaque") return false
  if (typeof value !== "string") {
    return places(value).slice(1).some((p) =>
      (keyHolds(p.path) && kindAt(surface, body, [...path, ...p.path]) !== "opaque") ||
      (typeof p.value === "string" && readable(surface, body, [...path, ...p.path], p.value))
    )
  }
  return value.includes(SECRET) || (kind === "decoded" && decoded(value).includes(SECRET))
}
const keyHolds = (path: Path) => String(path[path.length - 1] ?? "").includes(SECRET)

// ---------------------------------------------------------------- realistic requests

const b64 = (text: string) => Buffer.from(text).toString("base64")
const PNG = b64("\x89PNG\r\n\x1a\nIHDR pixels")
const schema = fc.constantFrom<Json>(
  { type: "object", properties: { query: { type: "string", description: "what to look up" } }, required: ["query"] },
  {
    type: "object",
    properties: {
      arguments: { type: "string" },
      signature: { type: "object", properties: { bytes: { type: "string", enum: ["a", "b"] } } }
    }
  },
  {
    type: "object",
    properties: {
      items: {
        type: "array",
        items: { type: "object", properties: { encrypted_content: { type: "string", default: "x" } } }
      }
    }
  }
)

const chatBody: fc.Arbitrary<Json> = fc.record({
  tools: fc.option(
    schema.map((
      parameters
    ) => [{ type: "function", function: { name: "lookup", description: "look it up", parameters } }]),
    { nil: undefined }
  ),
  format: fc.option(schema.map((s) => ({ type: "json_schema", json_schema: { name: "out", schema: s } })), {
    nil: undefined
  }),
  parts: fc.subarray<Json>([
    { type: "text", text: "what is in these?" },
    { type: "image_url", image_url: { url: "https://img.example/cat.png", detail: "low" } },
    { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
    { type: "input_audio", input_audio: { data: b64("RIFF....WAVE"), format: "wav" } },
    { type: "file", file: { filename: "report.pdf", file_data: `data:application/pdf;base64,${b64("%PDF-1.7")}` } },
    { type: "file", file: { filename: "notes.txt", file_data: `data:text/plain;base64,${b64("some notes")}` } }
  ], { minLength: 1 })
}).map(({ format, parts, tools }) =>
  ({
    model: "gpt-4o-mini",
    messages: [
      { role: "system", content: "be brief" },
      { role: "user", content: parts },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: "{\"query\":\"x\"}" } }]
      },
      { role: "tool", tool_call_id: "call_1", content: "result text" },
      {
        role: "assistant",
        content: "ok",
        reasoning_details: [{ type: "reasoning.encrypted", data: "ZW5jcnlwdGVk" }, {
          type: "reasoning.text",
          text: "hm",
          signature: "c2ln"
        }]
      },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_2", type: "custom", custom: { name: "sql", input: "select 1" } }]
      },
      { role: "tool", tool_call_id: "call_2", content: [{ type: "text", text: "1" }] },
      { role: "assistant", content: null, function_call: { name: "legacy", arguments: "{}" } },
      { role: "function", name: "legacy", content: "done" }
    ],
    ...(tools !== undefined ? { tools } : {}),
    ...(format !== undefined ? { response_format: format } : {})
  }) as Json
)

const responsesBody: fc.Arbitrary<Json> = fc.record({
  tools: fc.option(schema.map((parameters) => [{ type: "function", name: "lookup", parameters }]), { nil: undefined }),
  format: fc.option(schema.map((s) => ({ format: { type: "json_schema", name: "out", schema: s } })), {
    nil: undefined
  }),
  parts: fc.subarray<Json>([
    { type: "input_text", text: "compare these" },
    { type: "input_image", image_url: "https://img.example/a.png", detail: "auto" },
    { type: "input_image", image_url: `data:image/jpeg;base64,${PNG}` },
    { type: "input_file", filename: "a.pdf", file_data: `data:application/pdf;base64,${b64("%PDF")}` },
    { type: "input_file", filename: "a.csv", file_data: `data:text/csv;base64,${b64("a,b\n1,2")}` },
    { type: "input_file", file_url: "https://files.example/a.pdf" }
  ], { minLength: 1 })
}).map(({ format, parts, tools }) =>
  ({
    model: "gpt-4o-mini",
    instructions: "answer in one line",
    input: [
      { role: "user", content: parts },
      {
        type: "reasoning",
        id: "rs_1",
        summary: [{ type: "summary_text", text: "thinking" }],
        encrypted_content: "gAAAAB"
      },
      { type: "function_call", call_id: "c1", name: "lookup", arguments: "{\"q\":1}" },
      {
        type: "function_call_output",
        call_id: "c1",
        output: [{ type: "input_text", text: "found" }, {
          type: "input_image",
          image_url: `data:image/png;base64,${PNG}`
        }]
      },
      { type: "computer_call", call_id: "cc", action: { type: "click", x: 1, y: 2 } },
      {
        type: "computer_call_output",
        call_id: "cc",
        output: { type: "computer_screenshot", image_url: `data:image/png;base64,${PNG}` }
      },
      { type: "image_generation_call", id: "ig", status: "completed", result: PNG },
      { type: "mcp_call", id: "m", server_label: "s", name: "t", arguments: "{}", output: "mcp said" },
      { role: "assistant", content: [{ type: "output_text", text: "done" }] }
    ],
    prompt: {
      id: "pmpt_1",
      variables: { topic: "cats", picture: { type: "input_image", image_url: `data:image/png;base64,${PNG}` } }
    },
    ...(tools !== undefined ? { tools } : {}),
    ...(format !== undefined ? { text: format } : {})
  }) as Json
)

const messagesBody: fc.Arbitrary<Json> = fc.record({
  tools: fc.option(schema.map((input_schema) => [{ name: "lookup", description: "look", input_schema }]), {
    nil: undefined
  }),
  blocks: fc.subarray<Json>([
    { type: "text", text: "read these" },
    { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } },
    { type: "image", source: { type: "url", url: "https://img.example/b.png" } },
    { type: "document", source: { type: "base64", media_type: "application/pdf", data: b64("%PDF") }, title: "a pdf" },
    { type: "document", source: { type: "text", media_type: "text/plain", data: "plain notes" } },
    { type: "document", source: { type: "base64", media_type: "text/plain", data: b64("encoded notes") } },
    {
      type: "document",
      source: {
        type: "content",
        content: [{ type: "text", text: "t" }, {
          type: "image",
          source: { type: "base64", media_type: "image/gif", data: PNG }
        }]
      }
    }
  ], { minLength: 1 })
}).map(({ blocks, tools }) =>
  ({
    model: "claude-test-model",
    max_tokens: 64,
    system: [{ type: "text", text: "be brief" }],
    messages: [
      { role: "user", content: blocks },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "let me see", signature: "EqQBCkYIARgCKkB" },
          { type: "redacted_thinking", data: "EmwKAhgBEgy" },
          {
            type: "text",
            text: "per the web",
            citations: [{
              type: "web_search_result_location",
              url: "https://a.example",
              title: "a",
              cited_text: "c",
              encrypted_index: "RWk="
            }]
          },
          { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "cats" } },
          {
            type: "web_search_tool_result",
            tool_use_id: "srvtoolu_1",
            content: [{
              type: "web_search_result",
              url: "https://a.example",
              title: "a",
              encrypted_content: "RWM=",
              page_age: "1 day"
            }]
          },
          {
            type: "web_fetch_tool_result",
            tool_use_id: "srvtoolu_2",
            content: {
              type: "web_fetch_result",
              url: "https://b.example",
              content: {
                type: "document",
                source: { type: "base64", media_type: "application/pdf", data: b64("%PDF") }
              }
            }
          },
          { type: "tool_use", id: "toolu_1", name: "lookup", input: { query: "x" } }
        ]
      },
      {
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: "toolu_1",
          content: [{ type: "text", text: "result" }, {
            type: "image",
            source: { type: "base64", media_type: "image/png", data: PNG }
          }]
        }]
      }
    ],
    ...(tools !== undefined ? { tools } : {})
  }) as Json
)

const kiroBody: fc.Arbitrary<Json> = fc.record({
  tools: fc.option(
    schema.map((json) => [{ toolSpecification: { name: "lookup", description: "look", inputSchema: { json } } }]),
    { nil: undefined }
  ),
  images: fc.boolean()
}).map(({ images, tools }) =>
  ({
    conversationState: {
      chatTriggerType: "MANUAL",
      conversationId: "c-1",
      currentMessage: {
        userInputMessage: {
          content: "and now?",
          modelId: "claude-sonnet-4.5",
          origin: "AI_EDITOR",
          ...(images ? { images: [{ format: "png", source: { bytes: PNG } }] } : {}),
          userInputMessageContext: {
            ...(tools !== undefined ? { tools } : {}),
            toolResults: [{ toolUseId: "t1", status: "success", content: [{ text: "found" }, { json: { rows: 2 } }] }]
          }
        }
      },
      history: [
        {
          userInputMessage: {
            content: "look it up",
            modelId: "claude-sonnet-4.5",
            origin: "AI_EDITOR",
            images: [{ format: "jpeg", source: { bytes: PNG } }]
          }
        },
        {
          assistantResponseMessage: {
            content: "checking",
            toolUses: [{ toolUseId: "t1", name: "lookup", input: { query: "x" } }]
          }
        }
      ]
    }
  }) as Json
)

const BODIES: Record<Surface, fc.Arbitrary<Json>> = {
  chat: chatBody,
  responses: responsesBody,
  messages: messagesBody,
  count_tokens: messagesBody,
  kiro: kiroBody
}

// ---------------------------------------------------------------- planting

/** The secret as a value: plain, in a URL, in a file name, or as a textual document a provider decodes. */
const secretValue = fc.constantFrom<Json>(
  SECRET,
  `my key is ${SECRET}, keep it`,
  `https://img.example/${SECRET}.png`,
  `https://img.example/x?k=${SECRET}`,
  `${SECRET}.pdf`,
  `data:text/plain;base64,${b64(`notes ${SECRET}`)}`,
  `data:application/json;base64,${b64(JSON.stringify({ key: SECRET }))}`,
  `data:text/csv;charset=utf-8;base64,${b64(`a,b\n1,${SECRET}`)}`,
  `data:image/png;base64,${b64(SECRET)}${SECRET}`,
  `data:,${encodeURIComponent(`text ${SECRET}`)}`,
  b64(`bare ${SECRET} text`),
  { nested: { deeper: [SECRET] } }
)
/** Member names a plant uses: documented payload names, providers' field names and unknown ones. */
const memberName = fc.constantFrom(
  "text",
  "detail",
  "arguments",
  "signature",
  "data",
  "bytes",
  "encrypted_content",
  "image_url",
  "input",
  "url",
  "filename",
  "file_data",
  "input_audio",
  "source",
  "description",
  "x_extra",
  "cache_control",
  "metadata",
  "note"
)
const PART_TYPES = [
  "image",
  "image_url",
  "input_image",
  "input_file",
  "file",
  "document",
  "thinking",
  "tool_use",
  "reasoning",
  "text",
  "hologram"
]

interface Plant {
  readonly body: Json
  /** Where the secret went: a value's path, or the path of a key named with it. */
  readonly path: Path
}

/** Every object, array and string of the body, with its path. */
const places = (value: Json, path: Path = [], out: Array<{ path: Path; value: Json }> = []) => {
  out.push({ path, value })
  if (Array.isArray(value)) value.forEach((item, i) => places(item, [...path, i], out))
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) places(v, [...path, k], out)
  }
  return out
}

const setAt = (root: Json, path: Path, value: Json): Json => {
  if (path.length === 0) return value
  const copy: any = Array.isArray(root) ? [...root] : { ...(root as object) }
  copy[path[0]!] = setAt(copy[path[0]!], path.slice(1), value)
  return copy
}
const getAt = (root: Json, path: Path): Json => path.reduce<any>((node, step) => node[step], root)

const plantIn = (surface: Surface) => (body: Json): fc.Arbitrary<Plant> =>
  fc.record({
    pick: fc.nat(),
    how: fc.constantFrom("replace", "replace-payload", "member", "key", "item", "part"),
    name: memberName,
    value: secretValue,
    type: fc.constantFrom(...PART_TYPES)
  }).map(({ how, name, pick, type, value }) => {
    const all = places(body)
    // `replace-payload` aims at the documented payload places, which are few among a request's strings.
    const strings = all.filter((p) =>
      typeof p.value === "string" && (how !== "replace-payload" || kindAt(surface, body, p.path) !== false)
    )
    const objects = all.filter((p) => p.value !== null && typeof p.value === "object" && !Array.isArray(p.value))
    const arrays = all.filter((p) => Array.isArray(p.value))
    if ((how === "replace" || how === "replace-payload") && strings.length > 0) {
      const at = strings[pick % strings.length]!.path
      return { body: setAt(body, at, value), path: at }
    }
    if (how === "item" && arrays.length > 0) {
      const at = arrays[pick % arrays.length]!.path
      const list = getAt(body, at) as Array<Json>
      return { body: setAt(body, at, [...list, value]), path: [...at, list.length] }
    }
    if (how === "part" && arrays.length > 0) {
      // A part of a mismatched or unknown type carrying the secret in a member another type documents.
      const at = arrays[pick % arrays.length]!.path
      const list = getAt(body, at) as Array<Json>
      return { body: setAt(body, at, [...list, { type, [name]: value }]), path: [...at, list.length, name] }
    }
    const at = objects[pick % objects.length]!.path
    const target = getAt(body, at) as Record<string, Json>
    if (how === "key") {
      return { body: setAt(body, at, { ...target, [`${name}_${SECRET}`]: 1 }), path: [...at, `${name}_${SECRET}`] }
    }
    // An extra field on a known part, or an unknown key anywhere (`member`, and `replace` with no string).
    const member = Object.hasOwn(target, name) ? `${name}_extra` : name
    return { body: setAt(body, at, { ...target, [member]: value }), path: [...at, member] }
  })

/** Whether the secret can be read anywhere in a forwarded body outside its opaque positions. */
const leaks = (surface: Surface, body: Json): boolean =>
  places(body).some(({ path, value }) =>
    (keyHolds(path) && kindAt(surface, body, path) !== "opaque") ||
    (typeof value === "string" && readable(surface, body, path, value))
  )

// ---------------------------------------------------------------- the gateways

let gateway: FirewallGateway
let kiro: KiroGateway
let both: Gateways
beforeAll(async () => {
  both = await startGateways()
  ;({ gateway, kiro } = both)
})
afterAll(() => both.close())
beforeEach(() => both.reset())

const ROUTES: Record<Exclude<Surface, "kiro">, string> = {
  chat: "/openai/ORG/v1/chat/completions",
  responses: "/openai/ORG/v1/responses",
  messages: "/anthropic/ORG/v1/messages",
  count_tokens: "/anthropic/ORG/v1/messages/count_tokens"
}

/** Sends one request; returns the status and what reached the provider (undefined for nothing). */
const through = async (surface: Surface, body: Json): Promise<{ status: number; forwarded: Array<string> }> => {
  if (surface === "kiro") {
    kiro.kiro.reset()
    const reply = await send(`${kiro.url}/kiro/${KIRO_ORG}/v1/generateAssistantResponse`, {
      headers: { authorization: `Bearer ${KIRO_KEY}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    return {
      status: reply.status,
      forwarded: kiro.kiro.calls.filter((c) => c.url.includes("generateAssistant")).map((c) => c.body.toString())
    }
  }
  gateway.upstream.reset()
  const reply = await send(`${gateway.url}${ROUTES[surface].replace("ORG", ORG)}`, {
    headers: { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  return { status: reply.status, forwarded: gateway.upstream.received.map((r) => r.body.toString()) }
}

const addRule = (surface: Surface, rule: typeof BLOCK | typeof REDACT) =>
  surface === "kiro" ? run(kiro.guardrails.create(KIRO_ORG, rule)) : run(gateway.guardrails.create(ORG, rule))

const planted = (surface: Surface) => BODIES[surface].chain(plantIn(surface))

describe("a planted secret reaches the provider only at a documented opaque position (property, per surface)", () => {
  for (const surface of ["chat", "responses", "messages", "count_tokens", "kiro"] as const) {
    it(`${surface}: a block rule refuses it everywhere else, and an opaque payload goes as sent`, async () => {
      await addRule(surface, BLOCK)
      const seen = { opaque: 0, refused: 0 }
      await fc.assert(
        fc.asyncProperty(planted(surface), async ({ body, path }) => {
          const { forwarded, status } = await through(surface, body)
          if (status === 403) seen.refused++
          if (kindAt(surface, body, path) === "opaque") {
            seen.opaque++
            expect(status).toBe(200)
            expect(forwarded).toHaveLength(1)
            expect(JSON.parse(forwarded[0]!)).toEqual(body)
          } else if (keyHolds(path) || readable(surface, body, path, getAt(body, path))) {
            // 403 from the firewall; 400 for a shape the gateway reads itself (a `model` that is no string).
            expect([400, 403]).toContain(status)
            expect(forwarded).toHaveLength(0)
          } else {
            // An encoded secret where nothing decodes it (base64 in a message, say) is no text anyone reads.
            if (status !== 200) expect([400, 403]).toContain(status)
            for (const sent of forwarded) expect(leaks(surface, JSON.parse(sent))).toBe(false)
          }
        }),
        { numRuns: RUNS }
      )
      // Both sides of the property were exercised.
      expect(seen.opaque).toBeGreaterThan(0)
      expect(seen.refused).toBeGreaterThan(0)
    })

    it(`${surface}: a redaction rule leaves no readable copy outside the opaque positions`, async () => {
      await addRule(surface, REDACT)
      await fc.assert(
        fc.asyncProperty(planted(surface), async ({ body }) => {
          const { forwarded, status } = await through(surface, body)
          // 403: a key cannot be rewritten, or a payload cannot be read or written back; 400: no string `model`.
          if (status === 403 || status === 400) {
            expect(forwarded).toHaveLength(0)
            return
          }
          expect(status).toBe(200)
          expect(forwarded).toHaveLength(1)
          expect(leaks(surface, JSON.parse(forwarded[0]!))).toBe(false)
        }),
        { numRuns: RUNS / 2 }
      )
    })
  }
})
