import { Clock, Context, Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { UNLIMITED } from "../auth/ApiKeyAuth.ts"
import { rateLimitHeaders } from "../ratelimit/Windows.ts"
import { clientAddressOf, TrustedProxies } from "../server/ClientAddress.ts"
import { lookup, makeFastPathGate } from "./FastPathGate.ts"
import { type QueryAnswer, queryKeyOfBody, queryResponse } from "./QueryAnswers.ts"
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
 * (`queryResponse`). Only a plain request is taken: no query string, a declared JSON body of at
 * most 4 KiB, exactly the payload's members with strings; anything else, and any doubt (a body
 * the handler would refuse, a miss, an authentication or admission that does not pass), goes
 * through the HttpApi unchanged, which stays the contract: OpenAPI, typed errors, the client.
 */
export const QueryFastPath = HttpRouter.middleware(
  Effect.gen(function*() {
    const gate = yield* makeFastPathGate
    const cache = yield* ResponseCache
    const unlimitedHeaders = rateLimitHeaders(UNLIMITED)
    // An answer's finished responses (immutable, shared by every request), gone with the answer.
    const bare = new WeakMap<QueryAnswer, HttpServerResponse.HttpServerResponse>()
    const unlimited = new WeakMap<QueryAnswer, HttpServerResponse.HttpServerResponse>()
    const bareOf = (answer: QueryAnswer) => {
      let response = bare.get(answer)
      if (response === undefined) bare.set(answer, response = queryResponse(answer))
      return response
    }
    const unlimitedOf = (answer: QueryAnswer) => {
      let response = unlimited.get(answer)
      if (response === undefined) {
        unlimited.set(answer, response = HttpServerResponse.setHeaders(bareOf(answer), unlimitedHeaders))
      }
      return response
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
              return { unlimited: () => unlimitedOf(hit.value), bare: () => bareOf(hit.value) }
            }
          })
        })
      })
  }),
  { global: true }
)
