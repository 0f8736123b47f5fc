import { Effect, Schema } from "effect"

/**
 * Shared pieces of the MCP tools: the one failure every tool can return (its
 * message starts with a code an agent can branch on and says what to do
 * next), cursor paging and truncation of long texts.
 */
export const FailureCode = Schema.Literals([
  "invalid_argument",
  "unknown_identifier",
  "not_permitted",
  "unavailable"
])
export type FailureCode = typeof FailureCode.Type

export class ToolFailure extends Schema.TaggedError<ToolFailure>()("ToolFailure", {
  code: FailureCode,
  message: Schema.String
}) {}

export const fail = (code: FailureCode, message: string) =>
  Effect.fail(new ToolFailure({ code, message: `${code}: ${message}` }))

/** What every tool returns: the structured data, and the same as a short text an agent can read directly. */
export const ToolResult = Schema.Struct({
  text: Schema.String.annotate({ description: "A short human-readable rendering of the result" }),
  data: Schema.Unknown.annotate({ description: "The structured result" })
})
export type ToolResult = typeof ToolResult.Type

/** The most identifiers one call (batch_lookup) or prompt takes. */
export const MAX_BATCH = 50
export const DEFAULT_PAGE_SIZE = 20
export const MAX_PAGE_SIZE = 100
export const DEFAULT_MAX_CHARS = 4000
export const MIN_MAX_CHARS = 100
export const MAX_MAX_CHARS = 50_000

/**
 * The text `check_guardrails` and the `test_guardrail_text` prompt test: at most 100,000
 * characters, refused while the arguments are decoded (the prompt accepted a longer one and
 * asked the model to explain a decision that was never made).
 */
export const MAX_GUARDRAIL_TEXT = 100_000
const guardrailTextTooLong = `text longer than ${MAX_GUARDRAIL_TEXT} characters: test a shorter excerpt`
export const GuardrailText = Schema.String.check(
  Schema.isMaxLength(MAX_GUARDRAIL_TEXT, { message: guardrailTextTooLong })
)
  .annotate({ description: `The text to test: at most ${MAX_GUARDRAIL_TEXT} characters (not logged)` })

export const Cursor = Schema.String.annotate({
  description: "Opaque cursor from a previous page's `nextCursor`; omit for the first page"
})

/**
 * A whole-number argument. Its range is in the JSON Schema (`type: integer`, `minimum`,
 * `maximum`) and in the refusal, which the MCP library makes an invalid-params error naming
 * the argument: a value outside it is refused, never clamped (`limit: -1` gave one item,
 * `max_chars: 1e9` 50,000 characters, while `count: 0` was refused).
 */
export const wholeNumber = (
  name: string,
  description: string,
  range: { readonly min: number; readonly max?: number; readonly default: number }
) => {
  const words = range.max === undefined ? `>= ${range.min}` : `from ${range.min} to ${range.max}`
  const message = `${name} must be a whole number ${words}`
  return Schema.Number.check(
    Schema.isInt({ message }),
    range.max === undefined
      ? Schema.isGreaterThanOrEqualTo(range.min, { message })
      : Schema.isBetween({ minimum: range.min, maximum: range.max }, { message })
  ).annotate({ description: `${description}: a whole number ${words} (default ${range.default})` })
}

export const PageSize = wholeNumber("limit", "Items per page", {
  min: 1,
  max: MAX_PAGE_SIZE,
  default: DEFAULT_PAGE_SIZE
})
export const MaxChars = wholeNumber("max_chars", "Longest text returned before it is cut with a marker", {
  min: MIN_MAX_CHARS,
  max: MAX_MAX_CHARS,
  default: DEFAULT_MAX_CHARS
})

const encodeCursor = (offset: number) => Buffer.from(`o:${offset}`, "utf8").toString("base64url")
const decodeCursor = (cursor: string | undefined): number | undefined => {
  if (cursor === undefined || cursor === "") return 0
  const m = /^o:(\d{1,9})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"))
  return m === null ? undefined : Number(m[1])
}

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly total: number
  readonly nextCursor: string | null
}

/** The offset and size a cursor and a requested size (in range: `PageSize` refused any other) stand for. */
export const pageRequest = (cursor: string | undefined, limit: number | undefined) =>
  Effect.gen(function*() {
    const offset = decodeCursor(cursor)
    if (offset === undefined) {
      return yield* fail("invalid_argument", "cursor is not one this server issued; omit it for the first page")
    }
    return { offset, size: limit ?? DEFAULT_PAGE_SIZE }
  })

export const pageOf = <A>(all: ReadonlyArray<A>, req: { readonly offset: number; readonly size: number }): Page<A> => ({
  items: all.slice(req.offset, req.offset + req.size),
  total: all.length,
  nextCursor: req.offset + req.size < all.length ? encodeCursor(req.offset + req.size) : null
})

export const nextCursorFor = (offset: number, size: number, total: number) =>
  offset + size < total ? encodeCursor(offset + size) : null

/**
 * Cuts a text at `max` characters (in range: `MaxChars` refused any other) with a
 * marker that says how to read the rest; `how` takes the limit applied, so a marker
 * naming the next offset follows what was returned.
 */
export const truncate = (text: string, max: number | undefined, how: string | ((limit: number) => string)) => {
  const limit = max ?? DEFAULT_MAX_CHARS
  return text.length <= limit
    ? { text, truncated: false }
    : {
      text: `${text.slice(0, limit)}\n[truncated: ${text.length - limit} more characters; ${
        typeof how === "string" ? how : how(limit)
      }]`,
      truncated: true
    }
}

/** Whether a `YYYY-MM-DD` text names a day of the calendar (2024-13-45 and 2023-02-29 do not). */
export const isCalendarDate = (text: string) => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false
  const day = new Date(`${text}T00:00:00Z`)
  return !Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === text
}

export const result = (text: string, data: unknown): ToolResult => ({ text, data })
