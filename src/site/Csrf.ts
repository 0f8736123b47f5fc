import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { originAllowed, SESSION_COOKIE } from "./SiteHttp.ts"

/**
 * The pages' CSRF tokens. A signed-in member's forms carry a token derived from their session: an
 * HMAC keyed by the session cookie's value, which only the browser holding that cookie can know
 * (it is HttpOnly and never stored: only its SHA-256 is). A cookie another site or a sibling port
 * plants cannot make a token match a session it does not hold, so a form post with a foreign or
 * stale token is refused whether or not the browser sends `Origin`; and a new session (sign-in)
 * means a new token. The sign-in form, before any session exists, uses the double-submit cookie
 * `vdb_csrf`, renewed at every sign-in.
 */
export const CSRF_COOKIE = "vdb_csrf"

const TOKEN = /^[A-Za-z0-9_-]{43}$/

/** The token a session's forms must carry. */
export const sessionCsrf = (sessionToken: string) =>
  createHmac("sha256", sessionToken).update("vdb site form v1").digest("base64url")

/** The sign-in form's token: the browser's `vdb_csrf` cookie, or a fresh one (`fresh`: the cookie must be set). */
export const signInCsrf = (request: HttpServerRequest.HttpServerRequest) => {
  const existing = request.cookies[CSRF_COOKIE]
  return existing !== undefined && TOKEN.test(existing)
    ? { token: existing, fresh: false }
    : { token: randomBytes(32).toString("base64url"), fresh: true }
}

const setCsrfCookie = (response: HttpServerResponse.HttpServerResponse, token: string, secure: boolean) =>
  HttpServerResponse.setCookieUnsafe(response, CSRF_COOKIE, token, {
    httpOnly: true,
    sameSite: "lax",
    secure,
    path: "/"
  })

export const withCsrfCookie = (
  response: HttpServerResponse.HttpServerResponse,
  csrf: { readonly token: string; readonly fresh: boolean },
  secure: boolean
) => csrf.fresh ? setCsrfCookie(response, csrf.token, secure) : response

/** At sign-in: a new `vdb_csrf`, so no value known or planted before the sign-in outlives it. */
export const renewCsrfCookie = (response: HttpServerResponse.HttpServerResponse, secure: boolean) =>
  setCsrfCookie(response, randomBytes(32).toString("base64url"), secure)

const matches = (expected: string | undefined, field: string | null) => {
  if (expected === undefined || field === null) return false
  const a = Buffer.from(expected)
  const b = Buffer.from(field)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** The sign-in form: its Origin (if any) is ours and its hidden token matches the `vdb_csrf` cookie. */
export const signInFormAllowed = Effect.fnUntraced(
  function*(request: HttpServerRequest.HttpServerRequest, form: URLSearchParams) {
    return (yield* originAllowed(request)) && matches(request.cookies[CSRF_COOKIE], form.get("csrf"))
  }
)

/** A signed-in member's form: its Origin (if any) is ours and its hidden token is the session's. */
export const sessionFormAllowed = Effect.fnUntraced(
  function*(request: HttpServerRequest.HttpServerRequest, form: URLSearchParams) {
    const session = request.cookies[SESSION_COOKIE]
    if (session === undefined || session.length === 0) return false
    return (yield* originAllowed(request)) && matches(sessionCsrf(session), form.get("csrf"))
  }
)
