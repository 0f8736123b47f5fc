import { ByteSize, Clock, Effect, Exit, Option, Redacted } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { apiKeyDigest, digestMatches, parseApiKey } from "../auth/ApiKey.ts"
import { Organizations } from "../orgs/Organizations.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { declaresOver } from "../server/BodyCap.ts"
import { rateLimitHeaders, retryAfterSeconds } from "../ratelimit/Windows.ts"
import { UsageLog } from "../usage/UsageLog.ts"

export const MCP_PATH = "/mcp"
export const DISCOVERY_PATH = "/.well-known/oauth-protected-resource"

/** The 401 challenge: the scheme, and (RFC 9728 section 5.1) where the resource metadata lives. */
export const challengeFor = (origin: string) =>
  `ApiKey realm="vdb-mcp", resource_metadata="${origin}${DISCOVERY_PATH}"`

const originOf = (request: HttpServerRequest.HttpServerRequest) =>
  `http://${request.headers.host ?? "localhost"}`

/**
 * A JSON-RPC request to these tools is a few KiB; 1 MiB leaves room for any
 * real one and keeps a bulk upload from being read and parsed at all.
 */
export const MAX_MCP_BODY_BYTES = 1024 * 1024
const maxBody = ByteSize.fromInputUnsafe(MAX_MCP_BODY_BYTES)

/** The MCP service's HTTP errors (outside JSON-RPC): `{error:{code,message}}`. */
export const errorBody = (status: number, code: string, message: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.jsonUnsafe({ error: { code, message } }, { status, headers })

/**
 * The HTTP gate in front of the MCP endpoint, the same decision as the
 * vulnerability API (src/api/AuthenticationLive.ts): `ApiKey <org>:<hex>`,
 * 401 without a valid one, 403 for an inactive organization, 429 over the
 * organization's limits. Every POST counts once and goes to the usage log
 * (route `/mcp`), so MCP traffic shares the organization's quota with the API.
 * Methods other than POST answer 405 `Allow: POST` before any of that.
 */
export const McpGate = HttpRouter.middleware(Effect.gen(function*() {
  const orgs = yield* Organizations
  const limiter = yield* RateLimiter
  const usage = yield* UsageLog

  const judge = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
    const key = parseApiKey((request.headers.authorization ?? "").trim())
    const challenge = { "www-authenticate": challengeFor(originOf(request)) }
    if (key === undefined) {
      return { org: null, refusal: errorBody(401, "unauthorized", "missing or malformed credentials: send Authorization: ApiKey <org_uuid>:<hex>", challenge) }
    }
    const found = yield* orgs.secretOf(key.orgUuid).pipe(Effect.option)
    if (Option.isNone(found) || !digestMatches(key.digest, apiKeyDigest(Redacted.value(found.value.secret), found.value.org.uuid))) {
      return { org: null, refusal: errorBody(401, "unauthorized", "invalid credentials", challenge) }
    }
    const org = found.value.org
    const limits = { perMinute: org.perMinute, perWeek: org.perWeek }
    if (!org.isActive) {
      const decision = yield* limiter.peek(org.uuid, limits)
      return { org: org.uuid, refusal: errorBody(403, "forbidden", "organization inactive", rateLimitHeaders(decision)) }
    }
    const decision = yield* limiter.consume(org.uuid, limits)
    if (!decision.admitted) {
      return {
        org: org.uuid,
        refusal: errorBody(429, "rate_limited", "rate limit exceeded: retry after the Retry-After seconds", {
          ...rateLimitHeaders(decision),
          "retry-after": String(retryAfterSeconds(decision))
        })
      }
    }
    return { org: org.uuid, refusal: null, headers: rateLimitHeaders(decision) }
  })

  return (httpEffect) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (request.method !== "POST") {
        return errorBody(405, "method_not_allowed", `method ${request.method} not allowed: use POST`, { allow: "POST" })
      }
      const started = performance.now()
      const at = new Date(yield* Clock.currentTimeMillis)
      const verdict = yield* judge(request)
      // A declared length over the cap is refused unread. Otherwise the body is read here, stopping at the
      // cap; the request keeps what it read, and the MCP server parses that copy.
      const overCap = verdict.refusal === null &&
        (declaresOver(request.headers, MAX_MCP_BODY_BYTES) ||
          Exit.isFailure(yield* Effect.exit(Effect.provideService(request.arrayBuffer, HttpIncomingMessage.MaxBodySize, maxBody))))
      const refusal = verdict.refusal ??
        (overCap
          ? errorBody(413, "payload_too_large", `request body over ${MAX_MCP_BODY_BYTES} bytes`, { connection: "close" })
          : null)
      const response = refusal ?? HttpServerResponse.setHeaders(yield* httpEffect, verdict.headers ?? {})
      usage.record({
        orgUuid: verdict.org,
        method: request.method,
        route: MCP_PATH,
        identifier: null,
        status: response.status,
        latencyMs: performance.now() - started,
        clientAddress: Option.getOrNull(request.remoteAddress),
        userAgent: (request.headers["user-agent"] ?? "").slice(0, 200) || null,
        at
      })
      return response
    })
}))
