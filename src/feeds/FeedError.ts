import { Schema } from "effect"

/**
 * Why one fetch of a feed failed. Every reason names what was wrong with the
 * publisher's answer in words a status line can show; none carries a header
 * value, a query string or a credential (URLs are shown without their query).
 */
export class FeedRefused extends Schema.TaggedError<FeedRefused>()("FeedRefused", {
  /** A short stable kind for `sync status --json` and tests. */
  kind: Schema.Literals([
    "InsecureUrl",
    "InsecureRedirect",
    "TooManyRedirects",
    "HttpStatus",
    "RateLimited",
    "WrongContentType",
    "TooLarge",
    "CompressionBomb",
    "Truncated",
    "LengthMismatch",
    "Corrupt",
    "Unreachable",
    "Timeout"
  ]),
  detail: Schema.String,
  /** When the publisher asked us to come back (Retry-After), epoch milliseconds. */
  retryAt: Schema.optional(Schema.Number)
}) {
  override get message() {
    return `${this.kind}: ${this.detail}`
  }
}

export type RefusalKind = FeedRefused["kind"]

export const refused = (kind: RefusalKind, detail: string, retryAt?: number) =>
  new FeedRefused(retryAt === undefined ? { kind, detail } : { kind, detail, retryAt })

/** A URL as it may appear in a status or log line: no user information, no query (an API key could sit there). */
export const shownUrl = (url: string | URL): string => {
  try {
    const u = new URL(url)
    return `${u.protocol}//${u.host}${u.pathname}`
  } catch {
    return "(an invalid URL)"
  }
}
