import { Clock, Effect, Redacted } from "effect"
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { ApprovalThrottle } from "../device/ApprovalThrottle.ts"
import { DeviceGrants } from "../device/DeviceGrants.ts"
import type { Member } from "../members/Member.ts"
import { Sessions } from "../members/Sessions.ts"
import { SiteApi } from "./Api.ts"
import { approvalPage, codePage, decidedPage, forbiddenPage, loginPage } from "./Pages.ts"
import {
  clearSessionCookie,
  clientAddress,
  csrfTokenOf,
  formAllowed,
  formBody,
  isHttps,
  SESSION_COOKIE,
  signedInMember,
  siteOrigin,
  withCsrfCookie,
  withSessionCookie
} from "./SiteHttp.ts"
import { makeSignIn, safeNext } from "./SignIn.ts"

const see = (location: string) => HttpServerResponse.redirect(location, { status: 303, headers: { "cache-control": "no-store" } })

const queryOf = (request: HttpServerRequest.HttpServerRequest) => new URL(request.url, "http://site.invalid").searchParams

const toLogin = (next: string) => see(`/login?next=${encodeURIComponent(next)}`)

/** Renders with the CSRF token, setting its cookie when the browser has none yet. */
const withCsrf = Effect.fnUntraced(function*(
  request: HttpServerRequest.HttpServerRequest,
  render: (csrf: string) => HttpServerResponse.HttpServerResponse
) {
  const csrf = csrfTokenOf(request)
  return withCsrfCookie(render(csrf.token), csrf, isHttps(yield* siteOrigin(request)))
})

/** A signed-in member's form post with a valid CSRF token, or the response that refuses it. */
const memberForm = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest, back: string) {
  const form = yield* formBody(request)
  const member = yield* signedInMember(request)
  if (member === undefined) return { ok: false, refused: toLogin(back) } as const
  if (!(yield* formAllowed(request, form))) return { ok: false, refused: forbiddenPage() } as const
  return { ok: true, member, form } as const
})

const throttledCodePage = (csrf: string, member: Member, code: string, wait: number) =>
  codePage({ csrf, email: member.email, code, error: `Too many wrong codes. Try again in ${Math.ceil(wait / 60)} minutes.`, status: 429 })

export const PageHandlers = HttpApiBuilder.group(SiteApi, "pages", Effect.fn(function*(handlers) {
  const grants = yield* DeviceGrants
  const throttle = yield* ApprovalThrottle
  const signIn = yield* makeSignIn

  return handlers
    .handleRaw("home", () => Effect.succeed(see("/device")))
    .handleRaw("login", ({ request }) =>
      Effect.gen(function*() {
        const next = safeNext(queryOf(request).get("next"))
        if ((yield* signedInMember(request)) !== undefined) return see(next)
        return yield* withCsrf(request, (csrf) => loginPage({ csrf, next }))
      }))
    .handleRaw("loginForm", ({ request }) =>
      Effect.gen(function*() {
        const form = yield* formBody(request)
        const next = safeNext(form.get("next"))
        if (!(yield* formAllowed(request, form))) return forbiddenPage()
        const email = form.get("email") ?? ""
        const result = yield* signIn(email, form.get("password") ?? "", clientAddress(request))
        const csrf = csrfTokenOf(request).token
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
            return withSessionCookie(
              see(next),
              Redacted.value(result.session.token),
              result.session.expiresAt,
              isHttps(yield* siteOrigin(request))
            )
        }
      }))
    .handleRaw("logoutForm", ({ request }) =>
      Effect.gen(function*() {
        const form = yield* formBody(request)
        if (!(yield* formAllowed(request, form))) return forbiddenPage()
        const token = request.cookies[SESSION_COOKIE]
        if (token !== undefined) yield* (yield* Sessions).close(token)
        return clearSessionCookie(see("/login"), isHttps(yield* siteOrigin(request)))
      }))
    .handleRaw("device", ({ request }) =>
      Effect.gen(function*() {
        const code = (queryOf(request).get("code") ?? "").slice(0, 16)
        const member = yield* signedInMember(request)
        if (member === undefined) return toLogin(code === "" ? "/device" : `/device?code=${encodeURIComponent(code)}`)
        return yield* withCsrf(request, (csrf) => codePage({ csrf, email: member.email, code }))
      }))
    .handleRaw("deviceForm", ({ request }) =>
      Effect.gen(function*() {
        const checked = yield* memberForm(request, "/device")
        if (!checked.ok) return checked.refused
        const { form, member } = checked
        const csrf = form.get("csrf")!
        const code = (form.get("code") ?? "").slice(0, 16)
        const wait = yield* throttle.check(member.uuid)
        if (wait !== undefined) return throttledCodePage(csrf, member, code, wait)
        return yield* grants.claim(code).pipe(
          Effect.flatMap((grant) =>
            Effect.map(Clock.currentTimeMillis, (now) => approvalPage({ csrf, email: member.email, grant, now }))
          ),
          Effect.catchTag("DeviceError", (error) =>
            Effect.as(
              error.reason._tag === "UnknownUserCode" ? throttle.wrongCode(member.uuid) : Effect.void,
              codePage({ csrf, email: member.email, code, error: error.message, status: 400 })
            ))
        )
      }))
    .handleRaw("decisionForm", ({ request }) =>
      Effect.gen(function*() {
        const checked = yield* memberForm(request, "/device")
        if (!checked.ok) return checked.refused
        const { form, member } = checked
        const csrf = form.get("csrf")!
        const code = (form.get("code") ?? "").slice(0, 16)
        const approve = form.get("decision") === "approve"
        // The same budget as the code form and the JSON approve/deny: this post takes a user code too,
        // and a member must not be able to walk the code space through it.
        const wait = yield* throttle.check(member.uuid)
        if (wait !== undefined) return throttledCodePage(csrf, member, code, wait)
        const decided = approve ? grants.approve(code, member.uuid) : grants.deny(code, member.uuid)
        return yield* decided.pipe(
          Effect.as(decidedPage(approve)),
          Effect.catchTag("DeviceError", (error) =>
            Effect.as(
              error.reason._tag === "UnknownUserCode" ? throttle.wrongCode(member.uuid) : Effect.void,
              codePage({ csrf, email: member.email, code, error: error.message, status: 400 })
            ))
        )
      }))
}))
