// What a POST to `/mcp` carries, read by the gate before the MCP server parses it: how big it may
// be, what it costs against the organization's limits, and the batches the library mishandled.

/**
 * A JSON-RPC request to these tools is a few KiB; 1 MiB leaves room for any
 * real one and keeps a bulk upload from being read and parsed at all.
 */
export const MAX_MCP_BODY_BYTES = 1024 * 1024

const JSON_WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d])
const OPEN_BRACKET = 0x5b
const OPEN_BRACE = 0x7b

/** The JSON-RPC codes of a message the server could not take at all: not JSON, or not a JSON-RPC message. */
export const PARSE_ERROR = -32700
export const INVALID_REQUEST = -32600

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const isRequest = (message: unknown): message is { readonly method: unknown; readonly id: unknown } =>
  typeof message === "object" && message !== null && "method" in message && "id" in message

/**
 * How many JSON-RPC requests a POST body carries, each a unit of the organization's limits: in a
 * batch, the elements with a `method` and an `id` (notifications and responses start no work).
 * Anything else is one, a body that does not parse included (the MCP server answers it), and no
 * POST is free. Only a body that starts as an array is parsed here.
 */
export const requestsIn = (body: ArrayBuffer): number => batchIn(body).units

const BATCH_ELEMENT_PROBLEM =
  "Invalid Request: every element of a batch must be a JSON-RPC 2.0 request, notification or response"

/** The most messages one batch may hold. The MCP library failed a batch of 4,001 or more with an empty 500. */
export const MAX_BATCH_MESSAGES = 1000

/**
 * A POST body as a batch: what it costs (`requestsIn`) and, for a batch the MCP library would
 * answer with no JSON-RPC at all, why it is refused. The library answered a batch holding
 * something other than messages (`[5]`, `[null]`, `[[…]]`) with an empty 200, and one of more
 * than 4,000 messages with an empty 500.
 */
export const batchIn = (body: ArrayBuffer): { readonly units: number; readonly problem?: string } => {
  if (firstByte(body) !== OPEN_BRACKET) return { units: 1 }
  const parsed = parsedOrUndefined(body)
  if (!Array.isArray(parsed)) return { units: 1 }
  // A refused batch starts no work: it costs what any POST costs, one unit, not one per request in it.
  if (parsed.length > MAX_BATCH_MESSAGES) {
    return { units: 1, problem: `Invalid Request: a batch holds at most ${MAX_BATCH_MESSAGES} messages` }
  }
  if (!parsed.every(isJsonRpcMessage)) return { units: 1, problem: BATCH_ELEMENT_PROBLEM }
  const requests = parsed.filter(isRequest)
  // The library keys its answers by id: two requests with one id got one answer, or an empty 503.
  if (new Set(requests.map((message) => `${typeof message.id}:${message.id}`)).size < requests.length) {
    return { units: 1, problem: "Invalid Request: the requests of a batch need distinct ids" }
  }
  return { units: Math.max(1, requests.length) }
}

/** A string, or a number JSON can carry back (a 5,000-digit one parses as Infinity, and came back null). */
const isId = (id: unknown) => typeof id === "string" || (typeof id === "number" && Number.isFinite(id))

/**
 * A JSON-RPC 2.0 message as the MCP library reads a single one: a request or notification (a
 * string `method`, an id if any a string or number), or a response (an id, and exactly one of
 * `result` and `error`). In a batch it dropped anything else without a word.
 */
const isJsonRpcMessage = (message: unknown): boolean => {
  if (!isRecord(message) || message.jsonrpc !== "2.0") return false
  if (typeof message.method === "string") return !("id" in message) || isId(message.id)
  return "id" in message && (isId(message.id) || message.id === null) && ("result" in message) !== ("error" in message)
}

/**
 * The byte a body's JSON starts with. A UTF-8 byte order mark is dropped by the decoder, so a
 * batch behind one is still a batch.
 */
const firstByte = (body: ArrayBuffer): number | undefined => {
  const bytes = new Uint8Array(body)
  let at = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0
  while (at < bytes.length && JSON_WHITESPACE.has(bytes[at]!)) at++
  return bytes[at]
}

const parsedOrUndefined = (body: ArrayBuffer): unknown => {
  try {
    return JSON.parse(new TextDecoder().decode(body))
  } catch {
    return undefined
  }
}

/**
 * An `initialize` is a few hundred bytes; the session it opens keeps it whole (client information,
 * capabilities, `_meta`) for the session's life, parsed: an 8 KiB one of empty objects holds about
 * 20 times its size. A bigger one is refused, so with the sessions cap what an organization can
 * make the process hold stays within a few tens of MiB.
 */
export const MAX_INITIALIZE_BYTES = 8 * 1024

/**
 * Whether a body over `MAX_INITIALIZE_BYTES` is an `initialize`. Only a single message is read here:
 * the MCP server refuses a batch that holds an `initialize` (and `requestsIn` parses batches).
 */
export const isOversizedInitialize = (body: ArrayBuffer): boolean => {
  if (body.byteLength <= MAX_INITIALIZE_BYTES || firstByte(body) !== OPEN_BRACE) return false
  const parsed = parsedOrUndefined(body)
  return typeof parsed === "object" && parsed !== null && (parsed as { method?: unknown }).method === "initialize"
}
