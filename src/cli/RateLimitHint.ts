import { Effect, Layer } from "effect"
import { FetchHttpClient, HttpClient, type HttpClientResponse } from "effect/http"

/**
 * What a 429 from the API says about the organization's limits, read from its headers
 * (`Retry-After`, `X-RateLimit-{Limit,Remaining}-{Minute,Week}`): the typed client turns the
 * answer into `TooManyRequests("rate limit exceeded")` and drops them, so the CLI keeps them
 * aside to tell the user when to retry and how the limit is raised.
 */
export interface RateLimitRefusal {
  /** Seconds, from `Retry-After`. */
  readonly retryAfter: number | undefined
  /** The windows used up: the per-minute and per-week limits (0 = unlimited is never one). */
  readonly exhausted: ReadonlyArray<{ readonly window: "minute" | "week"; readonly limit: number }>
}

const wholeHeader = (response: HttpClientResponse.HttpClientResponse, name: string) => {
  const value = response.headers[name]
  return value !== undefined && /^\d{1,12}$/.test(value) ? Number(value) : undefined
}

const refusalOf = (response: HttpClientResponse.HttpClientResponse): RateLimitRefusal => ({
  retryAfter: wholeHeader(response, "retry-after"),
  exhausted: (["minute", "week"] as const).flatMap((window) => {
    const limit = wholeHeader(response, `x-ratelimit-limit-${window}`)
    return limit !== undefined && limit > 0 && wholeHeader(response, `x-ratelimit-remaining-${window}`) === 0
      ? [{ window, limit }]
      : []
  })
})

/** One per command run: the last 429 its requests met. */
export interface RateLimitWatch {
  last: RateLimitRefusal | undefined
}

/** The fetch client, noting each 429 in `watch`. */
export const watchingHttpClient = (watch: RateLimitWatch) =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(HttpClient.HttpClient, (client) =>
      HttpClient.tap(client, (response) =>
        Effect.sync(() => {
          if (response.status === 429) watch.last = refusalOf(response)
        })))
  ).pipe(Layer.provide(FetchHttpClient.layer))

/** `42 s`, `12 min`, `3 h 20 min`, `4 d 6 h`. */
export const waitText = (seconds: number): string => {
  if (seconds < 90) return `${seconds} s`
  const minutes = Math.round(seconds / 60)
  if (minutes < 90) return `${minutes} min`
  const hours = Math.floor(minutes / 60)
  if (hours < 48) return `${hours} h${minutes % 60 === 0 ? "" : ` ${minutes % 60} min`}`
  const days = Math.floor(hours / 24)
  return `${days} d${hours % 24 === 0 ? "" : ` ${hours % 24} h`}`
}

/**
 * The line for a refused request: which limit is used up, when to retry, and the command an
 * operator of the server raises it with (`org limits` runs where the server's data is, not
 * with the API credential, so it is named for whoever runs the server).
 */
export const rateLimitLine = (refusal: RateLimitRefusal | undefined, orgUuid: string, now: number): string => {
  const exhausted = refusal?.exhausted ?? []
  const used = exhausted.length === 0
    ? "rate limit exceeded"
    : `rate limit exceeded: the organization's ${
      exhausted.map((e) => `${e.limit.toLocaleString("en")} request${e.limit === 1 ? "" : "s"} a ${e.window}`).join(
        " and "
      )
    } ${exhausted.length === 1 && exhausted[0]!.limit === 1 ? "is" : "are"} used up`
  const retryAfter = refusal?.retryAfter
  const retry = retryAfter === undefined
    ? "retry later"
    : retryAfter < 90
    ? `retry in ${waitText(retryAfter)}`
    : `retry in ${waitText(retryAfter)} (at ${
      new Date(now + retryAfter * 1000).toISOString().slice(0, 16).replace("T", " ")
    } UTC)`
  const flags = (exhausted.length === 0 ? ["minute", "week"] : exhausted.map((e) => e.window)).map((w) =>
    `--per-${w} N`
  ).join(" ")
  return `${used}; ${retry}. To raise the limit, the server's operator runs \`bin/vdb org limits ${orgUuid} ${flags}\` (0 = unlimited)`
}
