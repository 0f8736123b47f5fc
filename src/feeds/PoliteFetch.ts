import { Clock, Effect, Redacted, type Scope, type Stream } from "effect"
import { Headers, HttpClient, type HttpClientError, HttpClientRequest, type HttpClientResponse } from "effect/http"
import { backoffMs, retryAfterAt, USER_AGENT } from "./Backoff.ts"
import { type FeedRefused, refused, shownUrl } from "./FeedError.ts"
import { checkRedirect, checkUrl } from "./FeedUrl.ts"

/** One conditional GET of a publisher's file. */
export interface FetchPlan {
  readonly url: string
  /** Validators of the copy stored last time: the publisher answers 304 when it has not changed. */
  readonly etag?: string | undefined
  readonly lastModified?: string | undefined
  /** Media types the publisher serves this file as; any other (an HTML error page, say) is refused. */
  readonly contentTypes: ReadonlyArray<string>
  /** Extra request headers (an API key): sent, never shown. */
  readonly secretHeaders?: Readonly<Record<string, Redacted.Redacted<string>>>
  /** Other request headers the publisher asks for (an API's media type or version). */
  readonly headers?: Readonly<Record<string, string>>
  /**
   * When a publisher-specific refusal (GitHub's 403/429 with `x-ratelimit-reset`)
   * asks to come back: epoch milliseconds, or undefined when the answer is no rate limit.
   */
  readonly rateLimitedUntil?: (
    status: number,
    headers: Readonly<Record<string, string | undefined>>,
    now: number
  ) => number | undefined
  /** Epoch milliseconds past which no retry is started. */
  readonly deadline: number
  /** Tries on 429, 503, other 5xx and unreachable hosts, the first included. Default 5. */
  readonly attempts?: number | undefined
  /** Base of the exponential backoff between tries (tests shorten it). Default 1 s. */
  readonly backoffBaseMs?: number | undefined
}

export type Fetched =
  | { readonly _tag: "NotModified"; readonly url: string }
  | {
    readonly _tag: "Body"
    /** Where the bytes came from after redirects (provenance). */
    readonly url: string
    readonly etag: string | undefined
    readonly lastModified: string | undefined
    readonly contentLength: number | undefined
    /** The response's headers (paging links, rate-limit counters). */
    readonly headers: Readonly<Record<string, string | undefined>>
    /** GitHub's paging (`rel="next"`). */
    readonly link?: string | undefined
    readonly body: Stream.Stream<Uint8Array, HttpClientError.HttpClientError>
  }

const MAX_REDIRECTS = 5
/** Effect's default redacted header names (Headers.CurrentRedactedNames), kept when a feed adds its own. */
const REDACTED_ALWAYS = ["authorization", "cookie", "set-cookie", "x-api-key"]

/** Plain headers that carry credentials all the same: dropped with the secret ones on a redirect to another origin. */
const CREDENTIALS = ["authorization", "cookie", "x-api-key", "apikey"]

const mediaType = (value: string | undefined) => value?.split(";")[0]?.trim().toLowerCase()

const lengthOf = (value: string | undefined) =>
  value !== undefined && /^\d{1,15}$/.test(value.trim()) ? Number(value) : undefined

const retryable = (status: number) =>
  status === 429 || status === 503 || status === 500 || status === 502 || status === 504

/**
 * GETs a feed's file politely: a User-Agent naming vdb, the stored ETag and
 * Last-Modified as conditions, redirects followed by hand and only to https
 * (secret headers and Authorization are sent only while within the first origin),
 * 429 and 503 retried at the publisher's Retry-After (or with backoff when it
 * gives none), other 5xx and transport failures retried with backoff, never
 * past the deadline. A Retry-After beyond the deadline ends the run at once
 * as `RateLimited`, remembering when to come back. The response lives in the
 * caller's scope: closing it aborts a body left unread.
 */
export const politeFetch = Effect.fnUntraced(function*(plan: FetchPlan) {
  const client = HttpClient.withScope(yield* HttpClient.HttpClient)
  let url = yield* checkUrl(plan.url)
  const attempts = plan.attempts ?? 5
  let failures = 0
  let redirects = 0
  const origin = url.origin
  // Once a redirect leaves the feed's origin (scheme, host, port), no secret follows it, as browsers and curl do.
  let secrets = plan.secretHeaders ?? {}
  let plain = plan.headers ?? {}
  while (true) {
    const headers: Record<string, string> = { ...plain, "user-agent": USER_AGENT, "accept-encoding": "identity" }
    if (plan.etag !== undefined) headers["if-none-match"] = plan.etag
    if (plan.lastModified !== undefined) headers["if-modified-since"] = plan.lastModified
    for (const [name, value] of Object.entries(secrets)) headers[name] = Redacted.value(value)
    const request = HttpClientRequest.get(url, { headers })
    // The client records request headers on its trace span: a secret header must be among the redacted names.
    const sent = yield* Effect.exit(
      client.execute(request).pipe(
        Effect.provideService(Headers.CurrentRedactedNames, [
          ...REDACTED_ALWAYS,
          ...Object.keys(plan.secretHeaders ?? {})
        ])
      )
    )
    const now = yield* Clock.currentTimeMillis
    let retry: { readonly error: FeedRefused; readonly at: number | undefined }
    if (sent._tag === "Failure") {
      retry = { error: refused("Unreachable", `${shownUrl(url)} could not be reached`), at: undefined }
    } else {
      const response: HttpClientResponse.HttpClientResponse = sent.value
      const status = response.status
      if (status === 304) return { _tag: "NotModified", url: shownUrl(url) } satisfies Fetched as Fetched
      if (status >= 300 && status < 400 && response.headers.location !== undefined) {
        if (++redirects > MAX_REDIRECTS) {
          return yield* refused("TooManyRedirects", `${shownUrl(plan.url)} redirected more than ${MAX_REDIRECTS} times`)
        }
        url = yield* checkRedirect(url, response.headers.location)
        if (url.origin !== origin) {
          secrets = {}
          plain = Object.fromEntries(
            Object.entries(plain).filter(([name]) => !CREDENTIALS.includes(name.toLowerCase()))
          )
        }
        continue
      }
      if (status >= 200 && status < 300) {
        const type = mediaType(response.headers["content-type"])
        if (type !== undefined && !plan.contentTypes.includes(type)) {
          return yield* refused(
            "WrongContentType",
            `${shownUrl(url)} answered ${type.slice(0, 80)}, not ${plan.contentTypes.join(" or ")}`
          )
        }
        return {
          _tag: "Body",
          url: shownUrl(url),
          etag: response.headers.etag,
          lastModified: response.headers["last-modified"],
          contentLength: lengthOf(response.headers["content-length"]),
          headers: response.headers,
          link: response.headers.link,
          body: response.stream
        } satisfies Fetched as Fetched
      }
      const limitedUntil = plan.rateLimitedUntil?.(status, response.headers, now)
      if (limitedUntil !== undefined) {
        const wait = Math.ceil((limitedUntil - now) / 1000)
        retry = {
          error: refused("RateLimited", `${shownUrl(url)} answered ${status}, rate limit reset in ${wait} s`),
          at: limitedUntil
        }
      } else {
        if (!retryable(status)) return yield* refused("HttpStatus", `${shownUrl(url)} answered ${status}`)
        const asked = status === 429 || status === 503 ? retryAfterAt(response.headers["retry-after"], now) : undefined
        const kind = status === 429 || status === 503 ? "RateLimited" : "HttpStatus"
        retry = {
          error: refused(
            kind,
            `${shownUrl(url)} answered ${status}${
              asked === undefined ? "" : `, Retry-After ${Math.ceil((asked - now) / 1000)} s`
            }`,
            asked
          ),
          at: asked
        }
      }
    }
    failures++
    const at = retry.at ?? now + (yield* backoffMs(failures - 1, plan.backoffBaseMs))
    // Out of tries, or asked to wait past the deadline: stop now and let the next run come back at `at`.
    if (failures >= attempts || at > plan.deadline) return yield* refused(retry.error.kind, retry.error.detail, at)
    yield* Effect.sleep(Math.max(0, at - now))
  }
}) as (plan: FetchPlan) => Effect.Effect<Fetched, FeedRefused, HttpClient.HttpClient | Scope.Scope>
