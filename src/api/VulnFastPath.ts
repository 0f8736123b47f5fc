import { Clock, Context, Effect, Option, Redacted } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { apiKeyDigest, digestMatches, parseApiKey } from "../auth/ApiKey.ts"
import { Organizations } from "../orgs/Organizations.ts"
import { negotiate } from "../gateway/relay/Compression.ts"
import { rateLimitHeaders } from "../ratelimit/Windows.ts"
import { UsageLog } from "../usage/UsageLog.ts"
import { UNLIMITED } from "./AuthenticationLive.ts"
import { compressible, type VulnAnswer } from "./CachedAnswers.ts"
import { noneMatch } from "./Conditional.ts"
import { vulnResponse } from "./AnswerResponses.ts"
import { normaliseIdentifier } from "./Identifier.ts"
import { ResponseCache } from "./ResponseCache.ts"

const PREFIX = "/v1/vuln/"
/** Path characters that decode to themselves: the router's parameter is then the raw segment. */
const PLAIN_SEGMENT = /^[A-Za-z0-9._:-]{1,100}$/
const ROUTE = "/v1/vuln/:identifier"
const MAX_LOGGED = 200

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
 * whose answer is in the response cache, from an active organization with
 * both limits 0 presenting a valid `ApiKey`. Measured (docs/api.md), the
 * HttpApi's per-request machinery (route match, middleware chain, parameter
 * decoding) cost more than everything this request needs, so this case skips
 * it. The response is the one the `/vuln` handler sends (same function, same
 * headers, same usage-log entry); any other request, and any doubt (another
 * scheme, a percent-encoded or query-bearing path, a miss, a limited or
 * inactive organization, a wrong key), goes through the HttpApi unchanged,
 * which stays the contract: OpenAPI, typed errors and the client.
 */
export const VulnFastPath = HttpRouter.middleware(
  Effect.gen(function*() {
    const orgs = yield* Organizations
    const cache = yield* ResponseCache
    const usage = yield* UsageLog
    const unlimitedHeaders = rateLimitHeaders(UNLIMITED)
    // The finished responses of an answer (immutable values, sent as they are by any number of
    // requests), gone with the answer when the cache drops it.
    const sent = new WeakMap<VulnAnswer, Partial<Record<Variant, HttpServerResponse.HttpServerResponse>>>()
    const responseOf = (answer: VulnAnswer, request: HttpServerRequest.HttpServerRequest, cacheKey: string) => {
      const variant = variantOf(answer, request)
      let responses = sent.get(answer)
      if (responses === undefined) sent.set(answer, responses = {})
      return responses[variant] ??= HttpServerResponse.setHeaders(
        vulnResponse(answer, request, (bytes) => cache.grew(cacheKey, bytes)),
        unlimitedHeaders
      )
    }
    const digests = new WeakMap<Redacted.Redacted<string>, string>()
    const expectedDigest = (secret: Redacted.Redacted<string>, orgUuid: string) => {
      let digest = digests.get(secret)
      if (digest === undefined) digests.set(secret, digest = apiKeyDigest(Redacted.value(secret), orgUuid))
      return digest
    }

    return (httpEffect) =>
      Effect.withFiber((fiber) => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        if (request.method !== "GET" || !request.url.startsWith(PREFIX)) return httpEffect
        const raw = request.url.slice(PREFIX.length)
        // Plain and at most 100 characters: nothing `identifierProblem` would refuse.
        if (!PLAIN_SEGMENT.test(raw)) return httpEffect
        const authorization = request.headers.authorization
        if (authorization === undefined || !/^apikey /i.test(authorization)) return httpEffect
        const key = parseApiKey(`ApiKey ${authorization.slice(7).trim()}`)
        if (key === undefined) return httpEffect
        const id = normaliseIdentifier(raw)
        if (id === undefined) return httpEffect
        const cacheKey = `vuln\u0000${id}`
        const started = performance.now()
        const at = fiber.getRef(Clock.Clock).currentTimeMillisUnsafe()
        return Effect.flatMap(Effect.option(orgs.secretOf(key.orgUuid)), (found) => {
          if (Option.isNone(found)) return httpEffect
          const { org, secret } = found.value
          if (!org.isActive || org.perMinute !== 0 || org.perWeek !== 0) return httpEffect
          if (!digestMatches(key.digest, expectedDigest(secret, org.uuid))) return httpEffect
          const hit = cache.peek<VulnAnswer>(cacheKey)
          if (hit === undefined) return httpEffect
          const response = responseOf(hit.value, request, cacheKey)
          usage.record({
            orgUuid: org.uuid,
            method: request.method,
            route: ROUTE,
            identifier: raw.slice(0, MAX_LOGGED),
            status: response.status,
            latencyMs: performance.now() - started,
            clientAddress: Option.getOrNull(request.remoteAddress),
            userAgent: request.headers["user-agent"]?.slice(0, MAX_LOGGED) ?? null,
            at: new Date(at)
          })
          return Effect.succeed(response)
        })
      })
  }),
  { global: true }
)
