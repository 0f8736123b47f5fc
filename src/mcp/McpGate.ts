import type { BlockList } from "node:net"
import { ByteSize, Clock, Config, Duration, Effect, Exit, Option, Redacted, Schedule, Schema } from "effect"
import { HttpEffect, HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { apiKeyDigest, digestMatches, parseApiKey } from "../auth/ApiKey.ts"
import { Host, ServicePorts, urlHostOf } from "../config/AppConfig.ts"
import { Organizations } from "../orgs/Organizations.ts"
import { type Limits, RateLimiter } from "../ratelimit/RateLimiter.ts"
import { declaresOver } from "../server/BodyCap.ts"
import { clientAddressOf, resolveForwardedProto, TrustedProxies } from "../server/ClientAddress.ts"
import { echoableHost } from "../server/HostHeader.ts"
import { rateLimitHeaders, retryAfterSeconds } from "../ratelimit/Windows.ts"
import { UsageLog } from "../usage/UsageLog.ts"
import { type McpSession, McpSessionSettings, SessionTable } from "./McpSessions.ts"

export const MCP_PATH = "/mcp"
export const DISCOVERY_PATH = "/.well-known/oauth-protected-resource"

/** The methods `/mcp` serves: JSON-RPC, and DELETE to end a session. */
export const MCP_METHODS = "POST, DELETE"

/** The 401 challenge: the scheme, and (RFC 9728 section 5.1) where the resource metadata lives. */
export const challengeFor = (origin: string) =>
  `ApiKey realm="vdb-mcp", resource_metadata="${origin}${DISCOVERY_PATH}"`

/** Why a `VDB_MCP_URL` is not a public origin (`https://mcp.example` or `http://host:port`), or true. */
export const publicOriginProblem = (value: string): true | string => {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return "not a URL; expected an origin such as https://mcp.example"
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "an http or https origin is expected, such as https://mcp.example"
  if (url.username !== "" || url.password !== "" || url.pathname !== "/" || url.search !== "" || url.hash !== "") {
    return "an origin only is expected (scheme, host and port), without a path, query or credentials"
  }
  return true
}

/**
 * `VDB_MCP_URL`: the MCP service's public origin, for a service behind a TLS proxy or under another
 * name (`https://mcp.example`). RFC 9728 clients check that the discovery document's `resource`
 * is the URL they used, so it must say `https` there. Unset: `http://` and the request's Host.
 */
const PublicOrigin = Config.option(
  Config.schema(Schema.String.check(Schema.makeFilter(publicOriginProblem)), "VDB_MCP_URL")
).pipe(Config.map(Option.map((value) => new URL(value).origin)))

export interface ServiceAddress {
  /** `host:port` of the MCP service itself (VDB_HOST, VDB_MCP_PORT); a wildcard listen address is named as loopback. */
  readonly own: string
  /** `VDB_MCP_URL`'s origin, when set. */
  readonly publicOrigin: string | undefined
}

/** Where the MCP service is: what its answers name. */
export const ServiceHost: Config.Config<ServiceAddress> = Config.all({ host: Host, ports: ServicePorts, publicOrigin: PublicOrigin })
  .pipe(Config.map(({ host, ports, publicOrigin }) => ({
    own: `${urlHostOf(host)}:${ports.mcp}`,
    publicOrigin: Option.getOrUndefined(publicOrigin)
  })))

/**
 * The origin a response names: `VDB_MCP_URL` when set; else the scheme (`https` when a trusted
 * proxy's `X-Forwarded-Proto` says so, `trusted` being `VDB_TRUSTED_PROXIES`) and the request's Host
 * when it is a valid `host[:port]`, otherwise the service's own address. `shared`: the same for any
 * request with that Host, so a shared cache may keep it (`vary: host`); an answer that followed a
 * forwarded scheme is not.
 */
export const originOf = (request: HttpServerRequest.HttpServerRequest, service: ServiceAddress, trusted: BlockList | undefined) => {
  if (service.publicOrigin !== undefined) return { origin: service.publicOrigin, shared: true }
  const host = echoableHost(request)
  const forwarded = resolveForwardedProto(trusted, Option.getOrUndefined(request.remoteAddress), request.headers["x-forwarded-proto"])
  return { origin: `${forwarded ?? "http"}://${host ?? service.own}`, shared: host !== undefined && forwarded === undefined }
}

/**
 * A JSON-RPC request to these tools is a few KiB; 1 MiB leaves room for any
 * real one and keeps a bulk upload from being read and parsed at all.
 */
export const MAX_MCP_BODY_BYTES = 1024 * 1024
const maxBody = ByteSize.fromInputUnsafe(MAX_MCP_BODY_BYTES)

/** The MCP service's HTTP errors (outside JSON-RPC): `{error:{code,message}}`. */
export const errorBody = (status: number, code: string, message: string, headers: Readonly<Record<string, string>> = {}) =>
  HttpServerResponse.jsonUnsafe({ error: { code, message } }, { status, headers })

const JSON_WHITESPACE = new Set([0x20, 0x09, 0x0a, 0x0d])
const OPEN_BRACKET = 0x5b
const OPEN_BRACE = 0x7b

/** The JSON-RPC codes of a message the server could not take at all: not JSON, or not a JSON-RPC message. */
const PARSE_ERROR = -32700
const INVALID_REQUEST = -32600

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

const isRequest = (message: unknown): message is { readonly method: unknown; readonly id: unknown } =>
  typeof message === "object" && message !== null && "method" in message && "id" in message

/**
 * How many JSON-RPC requests a POST body carries, each a unit of the organization's limits: in a
 * batch, the elements with a `method` and an `id` (notifications and responses start no work).
 * Anything else is one, a body that does not parse included (the MCP server answers it), and no
 * POST is free. Only a body that starts as an array is parsed here.
 */
export const requestsIn = (body: ArrayBuffer): number => batchIn(body).units

const BATCH_ELEMENT_PROBLEM = "Invalid Request: every element of a batch must be a JSON-RPC 2.0 request, notification or response"

/** The most messages one batch may hold. The MCP library failed a batch of 4,001 or more with an empty 500. */
export const MAX_BATCH_MESSAGES = 1000

/**
 * A POST body as a batch: what it costs (`requestsIn`) and, for a batch the MCP library would
 * answer with no JSON-RPC at all, why it is refused. The library answered a batch holding
 * something other than messages (`[5]`, `[null]`, `[[…]]`) with an empty 200, and one of more
 * than 4,000 messages with an empty 500.
 */
export const batchIn = (body: ArrayBuffer): { readonly units: number; readonly problem?: string } => {
  if (firstByte(body) !== OPEN_BRACKET) return { units: 1 }
  const parsed = parsedOrUndefined(body)
  if (!Array.isArray(parsed)) return { units: 1 }
  // A refused batch starts no work: it costs what any POST costs, one unit, not one per request in it.
  if (parsed.length > MAX_BATCH_MESSAGES) return { units: 1, problem: `Invalid Request: a batch holds at most ${MAX_BATCH_MESSAGES} messages` }
  if (!parsed.every(isJsonRpcMessage)) return { units: 1, problem: BATCH_ELEMENT_PROBLEM }
  const requests = parsed.filter(isRequest)
  // The library keys its answers by id: two requests with one id got one answer, or an empty 503.
  if (new Set(requests.map((message) => `${typeof message.id}:${message.id}`)).size < requests.length) {
    return { units: 1, problem: "Invalid Request: the requests of a batch need distinct ids" }
  }
  return { units: Math.max(1, requests.length) }
}

/** A string, or a number JSON can carry back (a 5,000-digit one parses as Infinity, and came back null). */
const isId = (id: unknown) => typeof id === "string" || (typeof id === "number" && Number.isFinite(id))

/**
 * A JSON-RPC 2.0 message as the MCP library reads a single one: a request or notification (a
 * string `method`, an id if any a string or number), or a response (an id, and exactly one of
 * `result` and `error`). In a batch it dropped anything else without a word.
 */
const isJsonRpcMessage = (message: unknown): boolean => {
  if (!isRecord(message) || message.jsonrpc !== "2.0") return false
  if (typeof message.method === "string") return !("id" in message) || isId(message.id)
  return "id" in message && (isId(message.id) || message.id === null) && ("result" in message) !== ("error" in message)
}

/**
 * The byte a body's JSON starts with. A UTF-8 byte order mark is dropped by the decoder, so a
 * batch behind one is still a batch.
 */
const firstByte = (body: ArrayBuffer): number | undefined => {
  const bytes = new Uint8Array(body)
  let at = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0
  while (at < bytes.length && JSON_WHITESPACE.has(bytes[at]!)) at++
  return bytes[at]
}

const parsedOrUndefined = (body: ArrayBuffer): unknown => {
  try {
    return JSON.parse(new TextDecoder().decode(body))
  } catch {
    return undefined
  }
}

/**
 * An `initialize` is a few hundred bytes; the session it opens keeps it whole (client information,
 * capabilities, `_meta`) for the session's life, parsed: an 8 KiB one of empty objects holds about
 * 20 times its size. A bigger one is refused, so with the sessions cap what an organization can
 * make the process hold stays within a few tens of MiB.
 */
export const MAX_INITIALIZE_BYTES = 8 * 1024

/**
 * Whether a body over `MAX_INITIALIZE_BYTES` is an `initialize`. Only a single message is read here:
 * the MCP server refuses a batch that holds an `initialize` (and `requestsIn` parses batches).
 */
export const isOversizedInitialize = (body: ArrayBuffer): boolean => {
  if (body.byteLength <= MAX_INITIALIZE_BYTES || firstByte(body) !== OPEN_BRACE) return false
  const parsed = parsedOrUndefined(body)
  return typeof parsed === "object" && parsed !== null && (parsed as { method?: unknown }).method === "initialize"
}

/**
 * The refusals the MCP server sends without a body (its JSON-RPC errors have one), in this
 * service's dialect. By status, then by method where the reasons differ.
 */
const bareRefusal = (status: number, method: string): readonly [code: string, message: string] | undefined => {
  switch (status) {
    case 400:
      return ["bad_request", method === "DELETE"
        ? "send the Mcp-Session-Id of the session to end"
        : "request not accepted: a JSON-RPC batch needs a 2025-03-26 session and no initialize"]
    case 403:
      return ["forbidden", "requests with an Origin header (from a browser) are not served"]
    case 404:
      return ["not_found", "unknown or ended MCP session: initialize a new one"]
    case 406:
      return ["not_acceptable", "send Accept: application/json, text/event-stream"]
    case 415:
      return ["unsupported_media_type", "send Content-Type: application/json"]
  }
  return undefined
}

const withErrorBody = (response: HttpServerResponse.HttpServerResponse, method: string) => {
  const refusal = response.body._tag === "Empty" && response.headers["content-type"] === undefined
    ? bareRefusal(response.status, method)
    : undefined
  return refusal === undefined ? jsonRpcRefusal(response) : errorBody(response.status, refusal[0], refusal[1], response.headers)
}

const TAG = Buffer.from('"_tag"')

/**
 * The MCP library's own JSON-RPC refusals of a message, sent before any handler runs, in the JSON-RPC
 * form without what the library adds:
 * - its error class's `_tag` beside `code` and `message` (a JSON-RPC error object has `code`,
 *   `message` and `data`; the tag names a class of the library), dropped;
 * - HTTP 200 for a body that is not JSON (-32700) or not a JSON-RPC message (-32600). The MCP
 *   transport says a server that cannot accept a POSTed message answers an HTTP error status, and
 *   the MCP SDKs answer 400, so these are 400 (the library already answers 400 for an empty batch).
 * Handlers' errors (unknown method, unknown tool, invalid arguments) carry no tag: they pass as
 * they are, as does any body without `"_tag"` (found by a byte search; only a body holding it is parsed).
 */
const jsonRpcRefusal = (response: HttpServerResponse.HttpServerResponse) => {
  const body = response.body
  // No size bound: a refusal quotes the request's id, which the client may make as long as the body cap allows.
  if (body._tag !== "Uint8Array" || !body.contentType.startsWith("application/json")) return response
  if (Buffer.from(body.body.buffer, body.body.byteOffset, body.body.byteLength).indexOf(TAG) === -1) return response
  let message: unknown
  try {
    message = JSON.parse(new TextDecoder().decode(body.body))
  } catch {
    return response
  }
  if (!isRecord(message) || !isRecord(message.error) || !("_tag" in message.error)) return response
  const { _tag, ...error } = message.error
  const status = response.status === 200 && (error.code === PARSE_ERROR || error.code === INVALID_REQUEST) ? 400 : response.status
  return HttpServerResponse.jsonUnsafe({ jsonrpc: message.jsonrpc, id: message.id, error }, { status, headers: response.headers })
}

type Caller =
  | { readonly orgUuid: string | null; readonly refusal: HttpServerResponse.HttpServerResponse }
  | { readonly orgUuid: string; readonly refusal: null; readonly limits: Limits }

/**
 * The HTTP gate in front of the MCP endpoint, the same decision as the
 * vulnerability API (src/api/AuthenticationLive.ts): `ApiKey <org>:<hex>`,
 * 401 without a valid one, 403 for an inactive organization, then for a POST
 * 413 over the body cap and 429 over the organization's limits. A POST costs
 * one unit per JSON-RPC request it carries (`requestsIn`), so a batch cannot
 * carry more work than the limits allow; it is admitted whole or not at all.
 * A DELETE (ending a session) costs nothing. Every POST and DELETE goes to the
 * usage log once (route `/mcp`), so MCP traffic shares the organization's
 * quota with the API. Other methods answer 405 before any of that.
 *
 * The gate also bounds the sessions the MCP library holds (src/mcp/McpSessions.ts): a session is
 * used only by the organization that opened it (another one's id is 404, as an unknown one), one
 * idle for longer than `VDB_MCP_SESSION_IDLE` is ended (404, so the client initializes again, as the
 * MCP specification has it), and an organization's sessions past `VDB_MCP_SESSIONS_PER_ORG`, or the
 * process's past `VDB_MCP_SESSIONS_MAX`, are ended least recently used first.
 */
export const McpGate = HttpRouter.middleware(Effect.gen(function*() {
  const orgs = yield* Organizations
  const limiter = yield* RateLimiter
  const usage = yield* UsageLog
  const serviceHost = yield* ServiceHost
  const router = yield* HttpRouter.HttpRouter
  const settings = yield* McpSessionSettings
  const sessions = new SessionTable(settings.perOrg, Duration.toMillis(settings.idle), settings.max)
  // The DELETEs the gate itself sends: request objects made here, which no client can present.
  const ownRequests = new WeakSet<HttpServerRequest.HttpServerRequest>()

  /**
   * Ends a session in the MCP library the one way it offers: its own DELETE, which the process sends
   * to its router (the library keeps its sessions to itself). In a fiber of its own, because routing
   * a request replaces the running fiber's request context.
   */
  const end = (session: McpSession) =>
    Effect.suspend(() => {
      // The router reads the path only: a fixed URL, whatever VDB_HOST holds (a zone-scoped IPv6
      // address is no URL host).
      const request = HttpServerRequest.fromWeb(
        new Request(`http://localhost${MCP_PATH}`, {
          method: "DELETE",
          headers: { "mcp-session-id": session.id, "mcp-protocol-version": session.protocolVersion }
        })
      )
      ownRequests.add(request)
      return router.asHttpEffect().pipe(
        Effect.provideService(HttpServerRequest.HttpServerRequest, request),
        Effect.scoped,
        Effect.ignoreCause({ log: "Warn" }),
        Effect.forkDetach,
        Effect.asVoid
      )
    }).pipe(Effect.catchDefect((defect) => Effect.logWarning("mcp: a session could not be ended", defect)))
  const endAll = (ended: ReadonlyArray<McpSession>) => Effect.forEach(ended, end, { discard: true })

  // Abandoned sessions are ended even if no request names them again.
  const sweepEvery = Duration.millis(Math.min(60_000, Math.max(1_000, sessions.idleMs / 2)))
  yield* Clock.currentTimeMillis.pipe(
    Effect.flatMap((now) => endAll(sessions.sweep(now))),
    // One failed sweep must not end the sweeping.
    Effect.catchCause((cause) => Effect.logWarning("mcp: the session sweep failed", cause)),
    Effect.repeat(Schedule.spaced(sweepEvery)),
    Effect.forkScoped
  )

  /** Records the session an `initialize` opened (the library names it in a pre-response handler). */
  const recordOpened = (orgUuid: string) =>
    HttpEffect.appendPreResponseHandler((_request, response) =>
      Effect.gen(function*() {
        const id = response.headers["mcp-session-id"]
        if (id === undefined || sessions.get(id) !== undefined) return response
        const now = yield* Clock.currentTimeMillis
        const protocolVersion = response.headers["mcp-protocol-version"] ?? ""
        yield* endAll(sessions.add({ id, orgUuid, protocolVersion, lastUsed: now }))
        return response
      })
    )

  const unknownSession = errorBody(404, "not_found", "unknown or ended MCP session: initialize a new one")

  /** The session a request names: 404 for another organization's or an expired one; else it is used now. */
  const useSession = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest, orgUuid: string) {
    const id = request.headers["mcp-session-id"]
    const session = id === undefined ? undefined : sessions.get(id)
    if (session === undefined) return { session, refusal: null }
    if (session.orgUuid !== orgUuid) return { session: undefined, refusal: unknownSession }
    const now = yield* Clock.currentTimeMillis
    if (sessions.isExpired(session, now)) {
      sessions.remove(session)
      yield* end(session)
      return { session: undefined, refusal: unknownSession }
    }
    sessions.touch(session, now)
    return { session, refusal: null }
  })

  const authenticate = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest): Effect.fn.Return<Caller> {
    const key = parseApiKey((request.headers.authorization ?? "").trim())
    const challenge = { "www-authenticate": challengeFor(originOf(request, serviceHost, yield* TrustedProxies.useSync((list) => list)).origin) }
    if (key === undefined) {
      return { orgUuid: null, refusal: errorBody(401, "unauthorized", "missing or malformed credentials: send Authorization: ApiKey <org_uuid>:<hex>", challenge) }
    }
    const found = yield* orgs.secretOf(key.orgUuid).pipe(Effect.option)
    if (Option.isNone(found) || !digestMatches(key.digest, apiKeyDigest(Redacted.value(found.value.secret), found.value.org.uuid))) {
      return { orgUuid: null, refusal: errorBody(401, "unauthorized", "invalid credentials", challenge) }
    }
    const org = found.value.org
    const limits = { perMinute: org.perMinute, perWeek: org.perWeek }
    if (!org.isActive) {
      const decision = yield* limiter.peek(org.uuid, limits)
      return { orgUuid: org.uuid, refusal: errorBody(403, "forbidden", "organization inactive", rateLimitHeaders(decision)) }
    }
    return { orgUuid: org.uuid, refusal: null, limits }
  })

  /** A POST of an admitted caller: 413 over the cap, 429 over the limits, else the rate-limit headers. */
  const admit = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest, orgUuid: string, limits: Limits) {
    // A declared length over the cap is refused unread. Otherwise the body is read here, stopping at the
    // cap; the request keeps what it read, and the MCP server parses that copy. It is read before the
    // rate decision because what a POST costs is the number of requests in it.
    const read = declaresOver(request.headers, MAX_MCP_BODY_BYTES)
      ? undefined
      : yield* Effect.exit(Effect.provideService(request.arrayBuffer, HttpIncomingMessage.MaxBodySize, maxBody))
    if (read === undefined || Exit.isFailure(read)) {
      return { refusal: errorBody(413, "payload_too_large", `request body over ${MAX_MCP_BODY_BYTES} bytes`, { connection: "close" }), headers: {} }
    }
    if (isOversizedInitialize(read.value)) {
      return { refusal: errorBody(413, "payload_too_large", `an initialize request over ${MAX_INITIALIZE_BYTES} bytes`), headers: {} }
    }
    const batch = batchIn(read.value)
    const decision = yield* limiter.consume(orgUuid, limits, batch.units)
    if (!decision.admitted) {
      return {
        refusal: errorBody(429, "rate_limited", "rate limit exceeded: retry after the Retry-After seconds", {
          ...rateLimitHeaders(decision),
          "retry-after": String(retryAfterSeconds(decision))
        }),
        headers: {}
      }
    }
    if (batch.problem !== undefined) {
      // As the library answers an empty batch: one JSON-RPC error, HTTP 400.
      const refusal = HttpServerResponse.jsonUnsafe({ jsonrpc: "2.0", id: null, error: { code: INVALID_REQUEST, message: batch.problem } }, { status: 400 })
      return { refusal, headers: rateLimitHeaders(decision) }
    }
    return { refusal: null, headers: rateLimitHeaders(decision) }
  })

  return (httpEffect) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (ownRequests.has(request)) return yield* httpEffect
      if (request.method !== "POST" && request.method !== "DELETE") {
        return errorBody(405, "method_not_allowed", `method ${request.method} not allowed: use ${MCP_METHODS}`, { allow: MCP_METHODS })
      }
      const started = performance.now()
      const at = new Date(yield* Clock.currentTimeMillis)
      const trusted = yield* TrustedProxies.useSync((list) => list)
      const caller = yield* authenticate(request)
      // Ending a session only frees what the server holds for it: no unit of the limits.
      const admission = caller.refusal === null && request.method === "POST"
        ? yield* admit(request, caller.orgUuid, caller.limits)
        : { refusal: caller.refusal, headers: {} }
      const used = admission.refusal === null && caller.refusal === null
        ? yield* useSession(request, caller.orgUuid)
        : { session: undefined, refusal: admission.refusal }
      const response = used.refusal !== null
        ? HttpServerResponse.setHeaders(used.refusal, admission.headers)
        : withErrorBody(HttpServerResponse.setHeaders(yield* httpEffect, admission.headers), request.method)
      if (used.refusal === null && caller.refusal === null) {
        if (used.session !== undefined && request.method === "DELETE" && response.status === 204) sessions.remove(used.session)
        if (request.method === "POST" && request.headers["mcp-session-id"] === undefined) yield* recordOpened(caller.orgUuid)
      }
      // With the status the client gets: the MCP server answers a notification's 200 as 202 in a
      // pre-response handler of its own, which runs before this one.
      yield* HttpEffect.appendPreResponseHandler((_request, sent) =>
        Effect.sync(() => {
          usage.record({
            orgUuid: caller.orgUuid,
            method: request.method,
            route: MCP_PATH,
            identifier: null,
            status: sent.status,
            latencyMs: performance.now() - started,
            clientAddress: clientAddressOf(trusted, request),
            userAgent: (request.headers["user-agent"] ?? "").slice(0, 200) || null,
            at
          })
          return sent
        })
      )
      return response
    })
}))
