import { Clock, Context, Effect, Layer, Redacted } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import { type ErrorBody, Forbidden, TooManyRequests, Unauthorized } from "../../schema/ErrorBody.ts"
import type { Organization } from "../../schema/Organization.ts"
import { ApiKeyAuth, type SignInRefused } from "../auth/ApiKeyAuth.ts"
import { CurrentOrg } from "../auth/CurrentOrg.ts"
import { secretBinding, signedInWith } from "../auth/Jwt.ts"
import { verifyTokenRequest } from "../auth/SigV4Token.ts"
import { VerifiedTokens } from "../auth/VerifiedTokens.ts"
import { spanWhenTraced, TracingOn } from "../observability/Tracing.ts"
import { VulnApi } from "./Api.ts"
import { Authentication, type MeterSlot, RequestMeter, SignedRequest } from "./ApiSecurity.ts"

const unauthorized = (message: string) => new Unauthorized({ message })
const INVALID_CREDENTIALS = "invalid credentials"

/**
 * Headers of every answer of the data endpoints (`/info`, `/vuln`, `/exploits`: 200, 304 and
 * errors alike, HttpApi and fast path). An answer depends on the credential (rate-limit headers,
 * what the organization may see), so no shared cache may keep it (`private`); `no-cache` lets the
 * client's own cache keep it but revalidate every use, so each use is still authenticated (a
 * revoked credential stops working at once) and counted, and a 304 keeps that cheap.
 */
export const DATA_ANSWER_HEADERS = { "cache-control": "private, no-cache", "x-content-type-options": "nosniff" }
/** A token answer is a credential (RFC 6749 §5.1): stored by no cache at all. */
export const TOKEN_ANSWER_HEADERS = {
  "cache-control": "no-store",
  pragma: "no-cache",
  "x-content-type-options": "nosniff"
}

/** Registered before anything can fail, so errors (rendered later, from the error schemas) get the headers too. */
const withHeaders = (headers: Record<string, string>): HttpEffect.PreResponseHandler => (_request, response) =>
  Effect.succeed(HttpServerResponse.setHeaders(response, headers))
const dataAnswerHeaders = withHeaders(DATA_ANSWER_HEADERS)
const tokenAnswerHeaders = withHeaders(TOKEN_ANSWER_HEADERS)

const refusedAs = (refused: SignInRefused) => {
  switch (refused.reason) {
    case "malformed":
      return unauthorized("malformed ApiKey credential")
    case "invalid":
      // One message for an unknown organization and a wrong secret (ApiKey and sign-in alike): a
      // 401 must not tell whether a UUID exists.
      return unauthorized(INVALID_CREDENTIALS)
    case "inactive":
      return new Forbidden({ message: "organization inactive" })
    case "limited":
      return new TooManyRequests({ message: "rate limit exceeded" })
  }
}

/** The organization's state and limits (`ApiKeyAuth.admit`), recorded for the response headers and the usage log. */
const makeGate = Effect.gen(function*() {
  const auth = yield* ApiKeyAuth

  const findOrg = (uuid: string) => Effect.mapError(auth.organization(uuid), refusedAs)

  // One per organization object (a changed organization is a new object), so an admitted
  // request of an unlimited organization allocates nothing here.
  const principals = new WeakMap<Organization, Effect.Effect<CurrentOrg["Service"]>>()
  const principalOf = (org: Organization) => {
    let principal = principals.get(org)
    if (principal === undefined) {
      principal = Effect.succeed(CurrentOrg.of({ uuid: org.uuid, perMinute: org.perMinute, perWeek: org.perWeek }))
      principals.set(org, principal)
    }
    return principal
  }

  const admit = (
    slot: MeterSlot,
    org: Organization
  ): Effect.Effect<CurrentOrg["Service"], Unauthorized | Forbidden | TooManyRequests> => {
    slot.orgUuid = org.uuid
    return Effect.matchEffect(auth.admit(org), {
      onFailure: (refused) => {
        slot.decision = refused.decision ?? null
        return Effect.fail(refusedAs(refused))
      },
      onSuccess: (decision) => {
        slot.decision = decision
        return principalOf(org)
      }
    })
  }

  return { auth, findOrg, admit }
})

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const { admit, auth, findOrg } = yield* makeGate
    const tokens = yield* VerifiedTokens
    const authenticated = spanWhenTraced(yield* TracingOn, "api.authenticate")

    const viaApiKey = (slot: MeterSlot, credential: string) =>
      Effect.matchEffect(auth.verify(credential), {
        onFailure: (refused) => Effect.fail(refusedAs(refused)),
        onSuccess: ({ org }) => admit(slot, org)
      })

    const viaBearer = (slot: MeterSlot, token: string, nowMillis: number) => {
      const claims = tokens.claimsOf(token, nowMillis).pipe(
        // Spec 1 puts "credentials inactive or expired" under 403: the token was ours and good once.
        Effect.mapError((e) => e.reason === "expired" ? new Forbidden({ message: e.message }) : unauthorized(e.message))
      )
      return Effect.flatMap(claims, (verified) =>
        Effect.flatMap(
          findOrg(verified.orgUuid),
          // Signed in with a secret rotated since (the documented answer to a leaked secret): refused
          // like any token that is not good, on the next request to any process (the organization
          // entry, and with it the current secret, is dropped everywhere by the rotation).
          ({ org, secret }): Effect.Effect<CurrentOrg["Service"], Unauthorized | Forbidden | TooManyRequests> =>
            signedInWith(verified, secret) ? admit(slot, org) : Effect.fail(unauthorized("invalid token"))
        ))
    }

    // Both schemes share one decision per request: the builder tries the second
    // scheme when the first fails, and a request must be judged (and counted) once.
    // Read straight from the fiber's context: this runs on every API request.
    const middleware = (
      httpEffect: Effect.Effect<any, any, any>,
      options: { readonly group: { readonly identifier: string } }
    ) =>
      Effect.withFiber((fiber) => {
        const slot = Context.getUnsafe(fiber.context, RequestMeter)
        if (slot.authFailure !== undefined) return Effect.fail(slot.authFailure as Unauthorized)
        // Only this API's data endpoints: the gateway's manage API reuses this middleware and chooses its own headers.
        if (options.group.identifier === VulnApi.identifier) {
          HttpEffect.appendPreResponseHandlerUnsafe(fiber.context, dataAnswerHeaders)
        }
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        const header = (request.headers.authorization ?? "").trim()
        const space = header.indexOf(" ")
        const scheme = space === -1 ? header.toLowerCase() : header.slice(0, space).toLowerCase()
        const value = space === -1 ? "" : header.slice(space + 1).trim()
        const outcome = scheme === "apikey"
          ? viaApiKey(slot, `ApiKey ${value}`)
          : scheme === "bearer" && value !== ""
          ? viaBearer(slot, value, fiber.getRef(Clock.Clock).currentTimeMillisUnsafe())
          : Effect.fail(
            unauthorized("missing credentials: send Authorization: ApiKey <org_uuid>:<hex> or Bearer <token>")
          )
        return Effect.matchEffect(authenticated(outcome), {
          onFailure: (error) => {
            slot.authFailure = error
            return Effect.fail(error)
          },
          onSuccess: (org) => Effect.provideService(httpEffect, CurrentOrg, org)
        })
      })

    return Authentication.of({ apiKey: middleware, bearer: middleware })
  })
)

/**
 * The router answers HEAD with the GET route, and a HEAD that signs in would mint (and count) a
 * token nobody receives: a safe method with a side effect. The route's methods are GET (sign in)
 * and POST (always 400, explaining).
 */
const headNotAllowed = HttpServerResponse.jsonUnsafe(
  { success: false, error: "method HEAD not allowed: use GET, POST" } satisfies ErrorBody,
  { status: 405, headers: { allow: "GET, POST" } }
)

/** Which secret signed each sign-in in (its `secretBinding`), for the token the handler issues. */
const signInBindings = new WeakMap<CurrentOrg["Service"], string>()

/**
 * The binding of the secret a `GET /auth/token` request was verified with. The handler binds the
 * token to it rather than to the organization's secret as read again, which a rotation between
 * the two reads would have made the new one: a token signed in with the old secret must not
 * survive the rotation.
 */
export const signInBindingOf = (principal: CurrentOrg["Service"]) => signInBindings.get(principal)

export const SignedRequestLive = Layer.effect(
  SignedRequest,
  Effect.gen(function*() {
    const { admit, findOrg } = yield* makeGate
    return SignedRequest.of({
      sigv4: Effect.fnUntraced(function*(httpEffect) {
        yield* HttpEffect.appendPreResponseHandler(tokenAnswerHeaders)
        const request = yield* HttpServerRequest.HttpServerRequest
        if (request.method === "HEAD") return headNotAllowed
        const url = new URL(request.url, "http://localhost")
        const check = verifyTokenRequest({
          authorization: request.headers.authorization,
          amzDate: request.headers["x-amz-date"],
          path: url.pathname,
          query: url.search.slice(1),
          now: yield* Clock.currentTimeMillis
        })
        if (check._tag === "Rejected") return yield* unauthorized(check.reason)
        const { org, secret } = yield* findOrg(check.orgUuid)
        if (!check.verify(Redacted.value(secret))) return yield* unauthorized(INVALID_CREDENTIALS)
        // A principal of this request's own (the admitted one is shared by the organization's requests).
        const principal = CurrentOrg.of({ ...yield* admit(yield* RequestMeter, org) })
        signInBindings.set(principal, secretBinding(secret))
        return yield* Effect.provideService(httpEffect, CurrentOrg, principal)
      })
    })
  })
)
