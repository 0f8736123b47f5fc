import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Sessions } from "../members/Sessions.ts"
import { SiteApi } from "./Api.ts"
import { makeSignIn, withNewSession } from "./SignIn.ts"
import {
  clearSessionCookie,
  clientAddress,
  errorJson,
  isHttps,
  jsonGuard,
  jsonObjectBody,
  okJson,
  originAllowed,
  SESSION_COOKIE,
  siteOrigin
} from "./SiteHttp.ts"

/** `POST /api/site/v1/session` (programmatic sign-in) and `DELETE` (sign out). */
export const SessionHandlers = HttpApiBuilder.group(
  SiteApi,
  "session",
  Effect.fn(function*(handlers) {
    const signIn = yield* makeSignIn
    return handlers
      .handleRaw("signIn", ({ request }) =>
        Effect.gen(function*() {
          const refused = yield* jsonGuard(request)
          if (refused !== undefined) return refused
          const body = yield* jsonObjectBody(request)
          if (body === undefined || typeof body.email !== "string" || typeof body.password !== "string") {
            return errorJson(400, "invalid_request", "the body must be a JSON object with email and password")
          }
          const result = yield* signIn(body.email, body.password, yield* clientAddress(request))
          switch (result._tag) {
            case "throttled":
              return errorJson(429, "too_many_attempts", "too many failed sign-ins; try again later", {
                "retry-after": String(result.retryAfter)
              })
            case "wrongCredentials":
              return errorJson(401, "invalid_credentials", "wrong email or password")
            case "signedIn":
              return withNewSession(
                okJson({ email: result.member.email, expires_at: new Date(result.session.expiresAt).toISOString() }),
                result.session,
                isHttps(yield* siteOrigin(request))
              )
          }
        }))
      .handleRaw("signOut", ({ request }) =>
        Effect.gen(function*() {
          if (!(yield* originAllowed(request))) {
            return errorJson(403, "invalid_origin", "cross-origin requests are refused")
          }
          const token = request.cookies[SESSION_COOKIE]
          if (token !== undefined) {
            yield* (yield* Sessions).close(token)
          }
          return clearSessionCookie(HttpServerResponse.empty({ status: 204 }), isHttps(yield* siteOrigin(request)))
        }))
  })
)
