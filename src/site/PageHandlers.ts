import { Clock, Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { ApprovalThrottle } from "../device/ApprovalThrottle.ts"
import type { DeviceError } from "../device/DeviceError.ts"
import { DeviceGrants } from "../device/DeviceGrants.ts"
import type { Member } from "../members/Member.ts"
import { Sessions } from "../members/Sessions.ts"
import { SiteApi } from "./Api.ts"
import { sessionCsrf, sessionFormAllowed, signInCsrf, signInFormAllowed, withCsrfCookie } from "./Csrf.ts"
import { approvalPage, codePage, decidedPage, forbiddenPage, loginPage, noDecisionPage } from "./Pages.ts"
import { makeSignIn, safeNext, withNewSession } from "./SignIn.ts"
import {
  clearSessionCookie,
  clientAddress,
  formBody,
  isHttps,
  SESSION_COOKIE,
  signedInMember,
  siteOrigin
} from "./SiteHttp.ts"

const see = (location: string) =>
  HttpServerResponse.redirect(location, { status: 303, headers: { "cache-control": "no-store" } })

const queryOf = (request: HttpServerRequest.HttpServerRequest) =>
  new URL(request.url, "http://site.invalid").searchParams

const toLogin = (next: string) => see(`/login?next=${encodeURIComponent(next)}`)

const codeIn = (params: URLSearchParams) => (params.get("code") ?? "").slice(0, 16)

const decisionPath = (code: string) => `/device/decision?code=${encodeURIComponent(code)}`

/** The signed-in member and the token their session's forms carry; undefined when not signed in. */
const memberSession = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
  const member = yield* signedInMember(request)
  return member === undefined ? undefined : { member, csrf: sessionCsrf(request.cookies[SESSION_COOKIE]!) }
})

/** A signed-in member's form post carrying their session's token, or the response that refuses it. */
const memberForm = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest, back: string) {
  const form = yield* formBody(request)
  const session = yield* memberSession(request)
  if (session === undefined) return { ok: false, refused: toLogin(back) } as const
  if (!(yield* sessionFormAllowed(request, form))) return { ok: false, refused: forbiddenPage() } as const
  return { ok: true, ...session, code: codeIn(form), form } as const
})

/** The code page again, saying why the code was not taken; a throttled member is told when to retry. */
const refusedCodePage = (csrf: string, member: Member, code: string, error: DeviceError) => {
  if (error.reason._tag !== "TooManyWrongCodes") {
    return codePage({ csrf, email: member.email, code, error: error.message, status: 400 })
  }
  const wait = error.reason.retryAfter
  return codePage({
    csrf,
    email: member.email,
    code,
    error: `Too many wrong codes. Try again in ${Math.ceil(wait / 60)} minutes.`,
    status: 429
  })
    .pipe(HttpServerResponse.setHeader("retry-after", String(wait)))
}

export const PageHandlers = HttpApiBuilder.group(
  SiteApi,
  "pages",
  Effect.fn(function*(handlers) {
    const grants = yield* DeviceGrants
    const throttle = yield* ApprovalThrottle
    const signIn = yield* makeSignIn

    return handlers
      .handleRaw("home", () => Effect.succeed(see("/device")))
      .handleRaw("login", ({ request }) =>
        Effect.gen(function*() {
          const next = safeNext(queryOf(request).get("next"))
          if ((yield* signedInMember(request)) !== undefined) return see(next)
          const csrf = signInCsrf(request)
          return withCsrfCookie(loginPage({ csrf: csrf.token, next }), csrf, isHttps(yield* siteOrigin(request)))
        }))
      .handleRaw("loginForm", ({ request }) =>
        Effect.gen(function*() {
          const form = yield* formBody(request)
          const next = safeNext(form.get("next"))
          if (!(yield* signInFormAllowed(request, form))) return forbiddenPage()
          const email = form.get("email") ?? ""
          const result = yield* signIn(email, form.get("password") ?? "", yield* clientAddress(request))
          const csrf = signInCsrf(request).token
          switch (result._tag) {
            case "throttled":
              return loginPage({
                csrf,
                next,
                email,
                error: `Too many failed sign-ins. Try again in ${Math.ceil(result.retryAfter / 60)} minutes.`,
                status: 429
              }).pipe(HttpServerResponse.setHeader("retry-after", String(result.retryAfter)))
            case "wrongCredentials":
              return loginPage({ csrf, next, email, error: "Wrong email or password.", status: 401 })
            case "signedIn":
              return withNewSession(see(next), result.session, isHttps(yield* siteOrigin(request)))
          }
        }))
      .handleRaw("logoutForm", ({ request }) =>
        Effect.gen(function*() {
          const token = request.cookies[SESSION_COOKIE]
          // No session cookie: nothing to end.
          if (token === undefined) return see("/login")
          if (!(yield* sessionFormAllowed(request, yield* formBody(request)))) return forbiddenPage()
          yield* (yield* Sessions).close(token)
          return clearSessionCookie(see("/login"), isHttps(yield* siteOrigin(request)))
        }))
      .handleRaw("device", ({ request }) =>
        Effect.gen(function*() {
          const code = codeIn(queryOf(request))
          const session = yield* memberSession(request)
          if (session === undefined) {
            return toLogin(code === "" ? "/device" : `/device?code=${encodeURIComponent(code)}`)
          }
          return codePage({ csrf: session.csrf, email: session.member.email, code })
        }))
      .handleRaw("deviceForm", ({ request }) =>
        Effect.gen(function*() {
          const checked = yield* memberForm(request, "/device")
          if (!checked.ok) return checked.refused
          const { code, csrf, member } = checked
          return yield* throttle.guard(member.uuid, grants.claim(code)).pipe(
            Effect.flatMap((grant) =>
              Effect.map(Clock.currentTimeMillis, (now) => approvalPage({ csrf, email: member.email, grant, now }))
            ),
            Effect.catchTag("DeviceError", (error) => Effect.succeed(refusedCodePage(csrf, member, code, error)))
          )
        }))
      .handleRaw("decisionForm", ({ request }) =>
        Effect.gen(function*() {
          const checked = yield* memberForm(request, "/device")
          if (!checked.ok) return checked.refused
          const { code, csrf, form, member } = checked
          const decided = form.get("decision") === "approve"
            ? grants.approve(code, member.uuid)
            : grants.deny(code, member.uuid)
          // The same budget as the code form and the JSON approve/deny: this post takes a user code too.
          // Decided: redirect to the result, so reloading it shows the outcome and posts nothing again.
          return yield* throttle.guard(member.uuid, decided).pipe(
            Effect.map((grant) => see(decisionPath(grant.userCode))),
            Effect.catchTag("DeviceError", (error) => Effect.succeed(refusedCodePage(csrf, member, code, error)))
          )
        }))
      .handleRaw("decision", ({ request }) =>
        Effect.gen(function*() {
          const code = codeIn(queryOf(request))
          const member = yield* signedInMember(request)
          if (member === undefined) return toLogin(decisionPath(code))
          const decision = yield* grants.decisionBy(code, member.uuid)
          return decision === undefined ? noDecisionPage() : decidedPage(decision === "approved")
        }))
  })
)
