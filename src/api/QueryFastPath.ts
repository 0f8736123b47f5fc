import { Clock, Context, Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { UNLIMITED } from "../auth/ApiKeyAuth.ts"
import { TracingOn } from "../observability/Tracing.ts"
import { rateLimitHeaders } from "../ratelimit/Windows.ts"
import { clientAddressOf, TrustedProxies } from "../server/ClientAddress.ts"
import { ServerInterceptors } from "../server/InterceptingServer.ts"
import { type FastResponses, lookup, makeFastPathGate } from "./FastPathGate.ts"
import { type QueryAnswer, queryKeyOfBody, queryResponse, type QueryVariant, variantOf } from "./QueryAnswers.ts"
import { ResponseCache } from "./ResponseCache.ts"

export const QUERY_PATH = "/v1/query"
/** The usage log's route, as the HttpApi's metering records it (and the metrics' route template). */
export const QUERY_ROUTE = "/v1/query"
/** A query is a few hundred bytes; a body declared longer (up to the route's 64 KiB cap) is the HttpApi's. */
const MAX_BODY_BYTES = 4096
const CONTENT_LENGTH = /^[0-9]{1,4}$/
const JSON_CONTENT = /^application\/json\s*(?:;\s*charset="?utf-8"?\s*)?$/i

type RequestHeaders = { readonly [name: string]: string | ReadonlyArray<string> | undefined }

/**
 * The `Authorization` of a request the fast path may take, or undefined: `POST /v1/query` with no
 * query string, a declared JSON body of at most 4 KiB (Node's parser holds the body to it), never
 * chunked. Whether it is answered still depends on its body and credentials.
 */
export const plainQueryRequest = (method: string | undefined, url: string | undefined, headers: RequestHeaders) => {
  if (method !== "POST" || url !== QUERY_PATH) return undefined
  const { authorization, "content-length": length, "content-type": type } = headers
  if (typeof authorization !== "string" || typeof type !== "string" || !JSON_CONTENT.test(type)) return undefined
  if (typeof length !== "string" || !CONTENT_LENGTH.test(length) || Number(length) > MAX_BODY_BYTES) return undefined
  return headers["transfer-encoding"] === undefined ? authorization : undefined
}

/**
 * Whether `QueryListener` answers these requests below the router: on an `InterceptingServer`
 * (as `bin/vdb serve` runs), with tracing off (the platform's request spans stay the router's).
 */
export const listensBelowRouter = Effect.gen(function*() {
  return (yield* ServerInterceptors) !== undefined && !(yield* TracingOn)
})

/**
 * The finished responses of cached answers (immutable, shared by every request, gone with the
 * answer): `(key, accept-encoding)` to the responses of the answer cached under `key` in the
 * coding the client accepts, or undefined (a miss, or a coding the answer does not hold yet: the
 * handler compresses it off the event loop and keeps it). Counted as a cache hit only when
 * answered here, so a request left to the handler is counted once, by its `serve`.
 */
export const makeQueryResponses = Effect.gen(function*() {
  const cache = yield* ResponseCache
  const unlimitedHeaders = rateLimitHeaders(UNLIMITED)
  type Responses = Partial<Record<QueryVariant, HttpServerResponse.HttpServerResponse>>
  const bare = new WeakMap<QueryAnswer, Responses>()
  const unlimited = new WeakMap<QueryAnswer, Responses>()
  const bareOf = (answer: QueryAnswer, variant: QueryVariant) => {
    let responses = bare.get(answer)
    if (responses === undefined) bare.set(answer, responses = {})
    return responses[variant] ??= queryResponse(answer, variant)
  }
  const unlimitedOf = (answer: QueryAnswer, variant: QueryVariant) => {
    let responses = unlimited.get(answer)
    if (responses === undefined) unlimited.set(answer, responses = {})
    return responses[variant] ??= HttpServerResponse.setHeaders(bareOf(answer, variant), unlimitedHeaders)
  }
  return (key: string, acceptEncoding: string | ReadonlyArray<string> | undefined): FastResponses | undefined => {
    let variant: QueryVariant = "identity"
    const hit = cache.peek<QueryAnswer>(key, (answer) => {
      variant = variantOf(answer, acceptEncoding)
      return variant === "identity" || answer[variant] !== undefined
    })
    if (hit === undefined) return undefined
    return { unlimited: () => unlimitedOf(hit.value, variant), bare: () => bareOf(hit.value, variant) }
  }
})

/**
 * `POST /v1/query` whose answer is in the response cache, answered before the HttpApi. Measured
 * (docs/api.md, "Package queries under load"), the HttpApi's per-request machinery (route match,
 * middleware chain, payload schema decoding) was most of a cached query's CPU. The body is read
 * once (the request keeps it: on a fall-through the HttpApi decodes the same bytes) and keyed by
 * what it means (`queryKeyOfBody`: the package, release, version and page the handler keys its
 * answer by); the response is the handler's (`queryResponse`, in the coding the client accepts).
 * The authentication, admission and usage-log entry are the HttpApi's (`FastPathGate.ts`). Any
 * doubt (a body the handler would refuse, a miss, an authentication or admission that does not
 * pass) goes through the HttpApi unchanged, which stays the contract: OpenAPI, typed errors, the
 * client.
 *
 * This is the router's copy of the fast path. A server that answers below the router
 * (`QueryListener.ts`: an `InterceptingServer`, tracing off, as `bin/vdb serve` runs) takes these
 * requests before the platform makes anything of them, and this middleware steps aside.
 */
export const QueryFastPath = HttpRouter.middleware(
  Effect.gen(function*() {
    if (yield* listensBelowRouter) return (httpEffect) => httpEffect
    const gate = yield* makeFastPathGate
    const responsesOf = yield* makeQueryResponses
    return (httpEffect) =>
      Effect.withFiber((fiber) => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        const authorization = plainQueryRequest(request.method, request.url, request.headers)
        if (authorization === undefined) return httpEffect
        const started = performance.now()
        const atMillis = fiber.getRef(Clock.Clock).currentTimeMillisUnsafe()
        return Effect.flatMap(lookup(request.text), (text) => {
          const key = Option.isNone(text) ? undefined : queryKeyOfBody(text.value)
          if (key === undefined) return httpEffect
          return gate({
            request,
            authorization,
            fallThrough: httpEffect,
            route: QUERY_ROUTE,
            identifier: undefined,
            started,
            atMillis,
            clientAddress: () => clientAddressOf(fiber.getRef(TrustedProxies), request),
            responses: () => responsesOf(key, request.headers["accept-encoding"])
          })
        })
      })
  }),
  { global: true }
)
