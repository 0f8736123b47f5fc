import { ByteSize, Effect, Option } from "effect"
import { HttpIncomingMessage, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { Member } from "../members/Member.ts"
import { Sessions } from "../members/Sessions.ts"
import { declaresOver } from "../server/BodyCap.ts"
import { clientAddress as sharedClientAddress, requestScheme } from "../server/ClientAddress.ts"
import { echoableHost } from "../server/HostHeader.ts"
import { SiteAddress } from "./SiteUrl.ts"

export const SESSION_COOKIE = "vdb_session"

/** The client's address (src/server/ClientAddress.ts: the peer, or a trusted proxy's X-Forwarded-For). */
export const clientAddress = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<string> =>
  Effect.map(sharedClientAddress(request), (address) => address ?? "unknown")

/**
 * The origin this site is served at: `VDB_SITE_URL`; else the scheme (`https` when a trusted proxy's
 * `X-Forwarded-Proto` says so, else `http`) + `://` + the request's Host when it is a
 * valid `host[:port]` (the rule the MCP service uses), otherwise the site's own listening address.
 * A Host such as `a@b` would otherwise make `verification_uri` point somewhere else.
 */
export const siteOrigin = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
  const site = yield* Effect.orDie(SiteAddress)
  if (Option.isSome(site.configured)) return site.configured.value
  return `${yield* requestScheme(request)}://${echoableHost(request) ?? site.own}`
})

export const isHttps = (origin: string) => origin.startsWith("https://")

/** A request without `Origin` passes (CLIs, curl); one with it must name this site exactly. */
export const originAllowed = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
  const origin = request.headers["origin"]
  if (origin === undefined) return true
  return origin === new URL(yield* siteOrigin(request)).origin
})

const mediaType = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()

export const isJsonRequest = (request: HttpServerRequest.HttpServerRequest) => mediaType(request) === "application/json"
export const isFormRequest = (request: HttpServerRequest.HttpServerRequest) =>
  mediaType(request) === "application/x-www-form-urlencoded"

const MAX_BODY = 16 * 1024

/**
 * The body as text, read only up to the cap: a bigger one fails the read
 * (answered as a malformed body) instead of being buffered whole first, and
 * one declared bigger is not read at all.
 */
const cappedText = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<string, unknown> =>
  declaresOver(request.headers, MAX_BODY)
    ? Effect.fail(new Error("declared body over the cap"))
    : Effect.provideService(request.text, HttpIncomingMessage.MaxBodySize, ByteSize.fromInputUnsafe(MAX_BODY))

/** The body as a JSON object; undefined for anything else (including an oversized body). */
export const jsonObjectBody = (request: HttpServerRequest.HttpServerRequest) =>
  cappedText(request).pipe(
    Effect.map((text): Record<string, unknown> | undefined => {
      try {
        const value: unknown = JSON.parse(text)
        return typeof value === "object" && value !== null && !Array.isArray(value)
          ? value as Record<string, unknown>
          : undefined
      } catch {
        return undefined
      }
    }),
    Effect.orElseSucceed(() => undefined)
  )

/** The body as a form; undefined when it could not be read (over the 16 KiB cap, say). */
export const readableForm = (request: HttpServerRequest.HttpServerRequest) =>
  cappedText(request).pipe(
    Effect.map((text): URLSearchParams | undefined => new URLSearchParams(text)),
    Effect.orElseSucceed(() => undefined)
  )

/** The body as a form; an unreadable body reads as an empty form (on the pages: no CSRF token, so refused). */
export const formBody = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.map(readableForm(request), (form) => form ?? new URLSearchParams())

/** What a client is told when its body could not be read. */
export const UNREADABLE_BODY = `the body could not be read (at most ${MAX_BODY / 1024} KiB)`

const noStore = { "cache-control": "no-store", pragma: "no-cache" }

/** RFC 6749 §5.2 body; every site JSON error uses it. */
export const errorJson = (status: number, error: string, description: string, headers?: Record<string, string>) =>
  HttpServerResponse.jsonUnsafe({ error, error_description: description }, {
    status,
    headers: { ...noStore, ...headers }
  })

export const okJson = (body: unknown) => HttpServerResponse.jsonUnsafe(body, { headers: noStore })

/** JSON endpoints: `Content-Type: application/json` and, when sent, a same-origin `Origin` (the CSRF rule). */
export const crossOrigin = () => errorJson(403, "invalid_origin", "cross-origin requests are refused")
export const notJson = () =>
  errorJson(400, "invalid_request", "the body must be JSON with Content-Type: application/json")

export const jsonGuard = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
  if (!(yield* originAllowed(request))) return crossOrigin()
  if (!isJsonRequest(request)) return notJson()
  return undefined
})

export const signedInMember = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
  const token = request.cookies[SESSION_COOKIE]
  if (token === undefined || token.length === 0 || token.length > 200) return undefined
  const sessions = yield* Sessions
  return yield* sessions.resolve(token)
})

export const withSessionCookie = (
  response: HttpServerResponse.HttpServerResponse,
  token: string,
  expiresAt: number,
  secure: boolean
) =>
  HttpServerResponse.setCookieUnsafe(response, SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: "lax",
    secure,
    path: "/",
    expires: new Date(expiresAt)
  })

export const clearSessionCookie = (response: HttpServerResponse.HttpServerResponse, secure: boolean) =>
  HttpServerResponse.setCookieUnsafe(response, SESSION_COOKIE, "", {
    httpOnly: true,
    sameSite: "lax",
    secure,
    path: "/",
    expires: new Date(0)
  })

export type { Member }
