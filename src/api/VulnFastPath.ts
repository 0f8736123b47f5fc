import { Clock, Context, Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { UNLIMITED } from "../auth/ApiKeyAuth.ts"
import { negotiate } from "../http/Compression.ts"
import { rateLimitHeaders } from "../ratelimit/Windows.ts"
import { clientAddressOf, TrustedProxies } from "../server/ClientAddress.ts"
import { normaliseIdentifier } from "../vulns/Identifier.ts"
import { vulnResponse } from "./AnswerResponses.ts"
import { DATA_ANSWER_HEADERS } from "./AuthenticationLive.ts"
import { compressible, type VulnAnswer } from "./CachedAnswers.ts"
import { noneMatch } from "./Conditional.ts"
import { makeFastPathGate } from "./FastPathGate.ts"
import { ResponseCache } from "./ResponseCache.ts"

const PREFIX = "/v1/vuln/"
/** Path characters that decode to themselves: the router's parameter is then the raw segment. */
const PLAIN_SEGMENT = /^[A-Za-z0-9._:-]{1,100}$/
const ROUTE = "/v1/vuln/:identifier"

/** Which of an answer's responses a request gets: what `vulnResponse` decides, as a key. */
type Variant = "notModified" | "identity" | "gzip" | "br"
const variantOf = (answer: VulnAnswer, request: HttpServerRequest.HttpServerRequest): Variant =>
  noneMatch(request.headers["if-none-match"], answer.etag)
    ? "notModified"
    : compressible(answer)
    ? negotiate(request.headers["accept-encoding"]) ?? "identity"
    : "identity"

/**
 * The API's hottest request, answered before the router: `GET /v1/vuln/{id}`
 * whose answer is in the response cache, from an active organization
 * presenting a valid `ApiKey` or Bearer token, admitted by its rate limits (no
 * counter at all when both are 0), as `ApiKeyAuth` decides for every surface. Measured (docs/api.md), the HttpApi's
 * per-request machinery (route match, middleware chain, parameter decoding)
 * cost more than everything this request needs, so this case skips it. The
 * response is the one the `/vuln` handler sends (same function, same headers,
 * same usage-log entry); any other request, and any doubt (another scheme, a
 * percent-encoded or query-bearing path, a miss, an inactive organization, a
 * wrong key, a token that does not verify or was signed in with a secret
 * rotated since, a refusal), goes through the
 * HttpApi unchanged, which stays the contract: OpenAPI, typed errors and the
 * client. A limited organization is counted here, before its answer is sent
 * (the same `RateLimiter` as the HttpApi's, so the same groups and headers); a
 * request its limits refuse goes through the HttpApi, which decides again (a
 * refused request is never counted) and answers the 429 in the API's dialect.
 * A token is verified once a process, whichever path sees it first
 * (`VerifiedTokens`).
 */
export const VulnFastPath = HttpRouter.middleware(
  Effect.gen(function*() {
    const gate = yield* makeFastPathGate
    const cache = yield* ResponseCache
    const unlimitedHeaders = rateLimitHeaders(UNLIMITED)
    // The finished responses of an answer (immutable values, sent as they are by any number of
    // requests), gone with the answer when the cache drops it: without rate-limit headers (a limited
    // organization's request adds its own decision's), and with the unlimited ones.
    const bare = new WeakMap<VulnAnswer, Partial<Record<Variant, HttpServerResponse.HttpServerResponse>>>()
    const unlimited = new WeakMap<VulnAnswer, Partial<Record<Variant, HttpServerResponse.HttpServerResponse>>>()
    const bareOf = (
      answer: VulnAnswer,
      request: HttpServerRequest.HttpServerRequest,
      cacheKey: string,
      variant: Variant
    ) => {
      let responses = bare.get(answer)
      if (responses === undefined) bare.set(answer, responses = {})
      // The headers the HttpApi's authentication adds to its data answers, built into the kept response once.
      return responses[variant] ??= HttpServerResponse.setHeaders(
        vulnResponse(answer, request, (bytes) => cache.grew(cacheKey, bytes)),
        DATA_ANSWER_HEADERS
      )
    }
    const unlimitedOf = (answer: VulnAnswer, request: HttpServerRequest.HttpServerRequest, cacheKey: string) => {
      const variant = variantOf(answer, request)
      let responses = unlimited.get(answer)
      if (responses === undefined) unlimited.set(answer, responses = {})
      return responses[variant] ??= HttpServerResponse.setHeaders(
        bareOf(answer, request, cacheKey, variant),
        unlimitedHeaders
      )
    }
    return (httpEffect) =>
      Effect.withFiber((fiber) => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        if (request.method !== "GET" || !request.url.startsWith(PREFIX)) return httpEffect
        const raw = request.url.slice(PREFIX.length)
        // Plain and at most 100 characters: nothing `identifierProblem` would refuse.
        if (!PLAIN_SEGMENT.test(raw)) return httpEffect
        const authorization = request.headers.authorization
        if (authorization === undefined) return httpEffect
        const id = normaliseIdentifier(raw)
        if (id === undefined) return httpEffect
        const cacheKey = `vuln\u0000${id}`
        return gate({
          request,
          authorization,
          fallThrough: httpEffect,
          route: ROUTE,
          identifier: raw,
          started: performance.now(),
          atMillis: fiber.getRef(Clock.Clock).currentTimeMillisUnsafe(),
          clientAddress: () => clientAddressOf(fiber.getRef(TrustedProxies), request),
          responses: () => {
            const hit = cache.peek<VulnAnswer>(cacheKey)
            if (hit === undefined) return undefined
            return {
              unlimited: () => unlimitedOf(hit.value, request, cacheKey),
              bare: () => bareOf(hit.value, request, cacheKey, variantOf(hit.value, request))
            }
          }
        })
      })
  }),
  { global: true }
)
