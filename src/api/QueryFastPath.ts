import { Clock, Context, Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { UNLIMITED } from "../auth/ApiKeyAuth.ts"
import { rateLimitHeaders } from "../ratelimit/Windows.ts"
import { clientAddressOf, TrustedProxies } from "../server/ClientAddress.ts"
import { lookup, makeFastPathGate } from "./FastPathGate.ts"
import { type QueryAnswer, queryKeyOfBody, queryResponse, type QueryVariant, variantOf } from "./QueryAnswers.ts"
import { ResponseCache } from "./ResponseCache.ts"

const PATH = "/v1/query"
/** The usage log's route, as the HttpApi's metering records it. */
const ROUTE = "/v1/query"
/** A query is a few hundred bytes; a body declared longer (up to the route's 64 KiB cap) is the HttpApi's. */
const MAX_BODY_BYTES = 4096
const CONTENT_LENGTH = /^[0-9]{1,4}$/
const JSON_CONTENT = /^application\/json\s*(?:;\s*charset="?utf-8"?\s*)?$/i

/**
 * `POST /v1/query` whose answer is in the response cache, answered before the router as
 * `VulnFastPath` answers `/vuln` (the same authentication, admission and usage-log entry,
 * `FastPathGate.ts`). Measured (docs/api.md, "Package queries under load"), the HttpApi's
 * per-request machinery (route match, middleware chain, payload schema decoding) was most of a
 * cached query's CPU. The body is read once (the request keeps it: on a fall-through the HttpApi
 * decodes the same bytes) and keyed by what it means (`queryKeyOfBody`: the package, release,
 * version and page the handler keys its answer by); the response is the handler's
 * (`queryResponse`, in the coding the client accepts; a coding the answer does not hold yet is
 * left to the handler, which compresses it off the event loop and keeps it). Only a plain request is taken: no query string, a declared JSON body of at
 * most 4 KiB, exactly the payload's members with strings; anything else, and any doubt (a body
 * the handler would refuse, a miss, an authentication or admission that does not pass), goes
 * through the HttpApi unchanged, which stays the contract: OpenAPI, typed errors, the client.
 */
export const QueryFastPath = HttpRouter.middleware(
  Effect.gen(function*() {
    const gate = yield* makeFastPathGate
    const cache = yield* ResponseCache
    const unlimitedHeaders = rateLimitHeaders(UNLIMITED)
    // An answer's finished responses by variant (immutable, shared by every request), gone with the answer.
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
    return (httpEffect) =>
      Effect.withFiber((fiber) => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        if (request.method !== "POST" || request.url !== PATH) return httpEffect
        const { authorization, "content-length": length, "content-type": type } = request.headers
        if (authorization === undefined || type === undefined || !JSON_CONTENT.test(type)) return httpEffect
        // Declared and small (Node's parser holds the body to it), never chunked.
        if (length === undefined || !CONTENT_LENGTH.test(length) || Number(length) > MAX_BODY_BYTES) return httpEffect
        if (request.headers["transfer-encoding"] !== undefined) return httpEffect
        const started = performance.now()
        const atMillis = fiber.getRef(Clock.Clock).currentTimeMillisUnsafe()
        return Effect.flatMap(lookup(request.text), (text) => {
          const key = Option.isNone(text) ? undefined : queryKeyOfBody(text.value)
          if (key === undefined) return httpEffect
          return gate({
            request,
            authorization,
            fallThrough: httpEffect,
            route: ROUTE,
            identifier: undefined,
            started,
            atMillis,
            clientAddress: () => clientAddressOf(fiber.getRef(TrustedProxies), request),
            responses: () => {
              const hit = cache.peek<QueryAnswer>(key)
              if (hit === undefined) return undefined
              // A coding not compressed yet: the handler compresses it (off the event loop) and keeps it.
              const variant = variantOf(hit.value, request)
              if (variant !== "identity" && hit.value[variant] === undefined) return undefined
              return { unlimited: () => unlimitedOf(hit.value, variant), bare: () => bareOf(hit.value, variant) }
            }
          })
        })
      })
  }),
  { global: true }
)
