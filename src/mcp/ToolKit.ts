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

export const fail = (code: FailureCode, message: string) => Effect.fail(new ToolFailure({ code, message: `${code}: ${message}` }))

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

export const Cursor = Schema.String.annotate({
  description: "Opaque cursor from a previous page's `nextCursor`; omit for the first page"
})
export const PageSize = Schema.Finite.annotate({
  description: `Items per page (default ${DEFAULT_PAGE_SIZE}, at most ${MAX_PAGE_SIZE})`
})
export const MaxChars = Schema.Finite.annotate({
  description: `Longest text returned before it is cut with a marker (default ${DEFAULT_MAX_CHARS}, at least ${MIN_MAX_CHARS}, at most ${MAX_MAX_CHARS})`
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

/** The offset and size a cursor and a requested size stand for. */
export const pageRequest = (cursor: string | undefined, limit: number | undefined) =>
  Effect.gen(function*() {
    const offset = decodeCursor(cursor)
    if (offset === undefined) return yield* fail("invalid_argument", "cursor is not one this server issued; omit it for the first page")
    const size = Math.max(1, Math.min(MAX_PAGE_SIZE, Math.floor(limit ?? DEFAULT_PAGE_SIZE)))
    return { offset, size }
  })

export const pageOf = <A>(all: ReadonlyArray<A>, req: { readonly offset: number; readonly size: number }): Page<A> => ({
  items: all.slice(req.offset, req.offset + req.size),
  total: all.length,
  nextCursor: req.offset + req.size < all.length ? encodeCursor(req.offset + req.size) : null
})

export const nextCursorFor = (offset: number, size: number, total: number) =>
  offset + size < total ? encodeCursor(offset + size) : null

/**
 * Cuts a text at `max` characters (clamped) with a marker that says how to read
 * the rest; `how` may take the limit applied, so a marker naming the next
 * offset follows what was returned rather than what was asked for.
 */
export const truncate = (text: string, max: number | undefined, how: string | ((limit: number) => string)) => {
  const limit = Math.max(MIN_MAX_CHARS, Math.min(MAX_MAX_CHARS, Math.floor(max ?? DEFAULT_MAX_CHARS)))
  return text.length <= limit
    ? { text, truncated: false }
    : { text: `${text.slice(0, limit)}\n[truncated: ${text.length - limit} more characters; ${typeof how === "string" ? how : how(limit)}]`, truncated: true }
}

/** Whether a `YYYY-MM-DD` text names a day of the calendar (2024-13-45 and 2023-02-29 do not). */
export const isCalendarDate = (text: string) => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false
  const day = new Date(`${text}T00:00:00Z`)
  return !Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === text
}

export const result = (text: string, data: unknown): ToolResult => ({ text, data })
