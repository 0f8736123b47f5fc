import { ByteSize, Clock, Effect, Exit, Result } from "effect"
import { HttpEffect, HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { Organization } from "../../schema/Organization.ts"
import { ApiKeyAuth, type SignInRefused } from "../auth/ApiKeyAuth.ts"
import { rateLimitHeaders, retryAfterSeconds } from "../ratelimit/Windows.ts"
import { declaresOver } from "../server/BodyCap.ts"
import { clientAddressOf, TrustedProxies } from "../server/ClientAddress.ts"
import {
  batchIn,
  INVALID_REQUEST,
  isOversizedInitialize,
  MAX_INITIALIZE_BYTES,
  MAX_MCP_BODY_BYTES
} from "./JsonRpcBody.ts"
import { challengeFor, MCP_PATH, originOf, ServiceHost } from "./McpAddress.ts"
import { errorBody, withErrorBody } from "./McpRefusals.ts"
import { makeSessionKeeper } from "./McpSessionKeeper.ts"

// Where the tests have always found them.
export { requestsIn } from "./JsonRpcBody.ts"
export { publicOriginProblem } from "./McpAddress.ts"

/** The methods `/mcp` serves: JSON-RPC, and DELETE to end a session. */
export const MCP_METHODS = "POST, DELETE"

const maxBody = ByteSize.fromInputUnsafe(MAX_MCP_BODY_BYTES)

type Caller =
  | { readonly orgUuid: string | null; readonly refusal: HttpServerResponse.HttpServerResponse }
  | { readonly orgUuid: string; readonly refusal: null; readonly org: Organization }

/** `ApiKeyAuth`'s refusals in this service's dialect; `challenge`, the 401's `WWW-Authenticate`. */
const refusalOf = (refused: SignInRefused, challenge: () => Record<string, string>) => {
  switch (refused.reason) {
    case "malformed":
      return errorBody(
        401,
        "unauthorized",
        "missing or malformed credentials: send Authorization: ApiKey <org_uuid>:<hex>",
        challenge()
      )
    case "invalid":
      return errorBody(401, "unauthorized", "invalid credentials", challenge())
    case "inactive":
      return errorBody(
        403,
        "forbidden",
        "organization inactive",
        refused.decision === undefined ? {} : rateLimitHeaders(refused.decision)
      )
    case "limited": {
      const decision = refused.decision!
      return errorBody(429, "rate_limited", "rate limit exceeded: retry after the Retry-After seconds", {
        ...rateLimitHeaders(decision),
        "retry-after": String(retryAfterSeconds(decision))
      })
    }
  }
}

/**
 * The HTTP gate in front of the MCP endpoint, the same decision as the
 * vulnerability API: `ApiKey <org>:<hex>`,
 * 401 without a valid one, 403 for an inactive organization, then for a POST
 * 413 over the body cap and 429 over the organization's limits. A POST costs
 * one unit per JSON-RPC request it carries (`requestsIn`), so a batch cannot
 * carry more work than the limits allow; it is admitted whole or not at all.
 * A DELETE (ending a session) costs nothing. Every POST and DELETE goes to the
 * usage log once (route `/mcp`), so MCP traffic shares the organization's
 * quota with the API. Other methods answer 405 before any of that.
 * The decisions are `ApiKeyAuth`'s, as for every surface; this answers them in the MCP
 * service's dialect. The gate also bounds the sessions the MCP library holds (`makeSessionKeeper`).
 */
export const McpGate = HttpRouter.middleware(Effect.gen(function*() {
  const auth = yield* ApiKeyAuth
  const serviceHost = yield* ServiceHost
  const sessions = yield* makeSessionKeeper
  const unknownSession = errorBody(404, "not_found", "unknown or ended MCP session: initialize a new one")
  const noChallenge = () => ({})

  const authenticate = Effect.fnUntraced(
    function*(request: HttpServerRequest.HttpServerRequest): Effect.fn.Return<Caller> {
      const trusted = yield* TrustedProxies.useSync((list) => list)
      const challenge = () => ({ "www-authenticate": challengeFor(originOf(request, serviceHost, trusted).origin) })
      const signedIn = yield* Effect.result(auth.verify((request.headers.authorization ?? "").trim()))
      if (Result.isFailure(signedIn)) return { orgUuid: null, refusal: refusalOf(signedIn.failure, challenge) }
      const org = signedIn.success.org
      const active = yield* Effect.result(auth.active(org))
      if (Result.isFailure(active)) return { orgUuid: org.uuid, refusal: refusalOf(active.failure, noChallenge) }
      return { orgUuid: org.uuid, refusal: null, org }
    }
  )

  /** A POST of an admitted caller: 413 over the cap, 429 over the limits, else the rate-limit headers. */
  const admit = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest, org: Organization) {
    // A declared length over the cap is refused unread. Otherwise the body is read here, stopping at the
    // cap; the request keeps what it read, and the MCP server parses that copy. It is read before the
    // rate decision because what a POST costs is the number of requests in it.
    const read = declaresOver(request.headers, MAX_MCP_BODY_BYTES)
      ? undefined
      : yield* Effect.exit(Effect.provideService(request.arrayBuffer, HttpIncomingMessage.MaxBodySize, maxBody))
    if (read === undefined || Exit.isFailure(read)) {
      return {
        refusal: errorBody(413, "payload_too_large", `request body over ${MAX_MCP_BODY_BYTES} bytes`, {
          connection: "close"
        }),
        headers: {}
      }
    }
    if (isOversizedInitialize(read.value)) {
      return {
        refusal: errorBody(413, "payload_too_large", `an initialize request over ${MAX_INITIALIZE_BYTES} bytes`),
        headers: {}
      }
    }
    const batch = batchIn(read.value)
    const admitted = yield* Effect.result(auth.admit(org, batch.units))
    if (Result.isFailure(admitted)) return { refusal: refusalOf(admitted.failure, noChallenge), headers: {} }
    const headers = rateLimitHeaders(admitted.success)
    if (batch.problem !== undefined) {
      // As the library answers an empty batch: one JSON-RPC error, HTTP 400.
      const refusal = HttpServerResponse.jsonUnsafe({
        jsonrpc: "2.0",
        id: null,
        error: { code: INVALID_REQUEST, message: batch.problem }
      }, { status: 400 })
      return { refusal, headers }
    }
    return { refusal: null, headers }
  })

  return (httpEffect) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (sessions.isOwn(request)) return yield* httpEffect
      if (request.method !== "POST" && request.method !== "DELETE") {
        return errorBody(405, "method_not_allowed", `method ${request.method} not allowed: use ${MCP_METHODS}`, {
          allow: MCP_METHODS
        })
      }
      const started = performance.now()
      const at = new Date(yield* Clock.currentTimeMillis)
      const trusted = yield* TrustedProxies.useSync((list) => list)
      const caller = yield* authenticate(request)
      // Ending a session only frees what the server holds for it: no unit of the limits.
      const admission = caller.refusal === null && request.method === "POST"
        ? yield* admit(request, caller.org)
        : { refusal: caller.refusal, headers: {} }
      const used = admission.refusal === null && caller.refusal === null
        ? yield* sessions.use(request, caller.orgUuid)
        : { session: undefined, unknown: false }
      const refusal = used.unknown ? unknownSession : admission.refusal
      const response = refusal !== null
        ? HttpServerResponse.setHeaders(refusal, admission.headers)
        : withErrorBody(HttpServerResponse.setHeaders(yield* httpEffect, admission.headers), request.method)
      if (refusal === null && caller.refusal === null) {
        if (used.session !== undefined && request.method === "DELETE" && response.status === 204) {
          sessions.ended(used.session)
        }
        if (request.method === "POST" && request.headers["mcp-session-id"] === undefined) {
          yield* sessions.recordOpened(caller.orgUuid)
        }
      }
      // With the status the client gets: the MCP server answers a notification's 200 as 202 in a
      // pre-response handler of its own, which runs before this one.
      yield* HttpEffect.appendPreResponseHandler((_request, sent) =>
        Effect.sync(() => {
          auth.record(
            request,
            caller.orgUuid,
            MCP_PATH,
            undefined,
            sent.status,
            started,
            at,
            clientAddressOf(trusted, request)
          )
          return sent
        })
      )
      return response
    })
}))
