import { Clock, Effect, Layer, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import type { Organization } from "../../schema/Organization.ts"
import { Forbidden, TooManyRequests, Unauthorized } from "../../schema/ErrorBody.ts"
import { apiKeyDigest, digestMatches, parseApiKey } from "../auth/ApiKey.ts"
import { Jwt } from "../auth/Jwt.ts"
import { verifyTokenRequest } from "../auth/SigV4Token.ts"
import { Organizations } from "../orgs/Organizations.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { Authentication, CurrentOrg, RequestMeter, SignedRequest } from "./ApiSecurity.ts"

const unauthorized = (message: string) => new Unauthorized({ message })

/**
 * The organization's row is read from the database on every request (no cache of the row), so
 * a rotated secret or a deactivation takes effect on the very next request.
 */
const makeGate = Effect.gen(function*() {
  const orgs = yield* Organizations
  const limiter = yield* RateLimiter

  const findOrg = (uuid: string) =>
    orgs.secretOf(uuid).pipe(
      Effect.catchTag("OrgError", () => Effect.fail(unauthorized("invalid credentials")))
    )

  /** Active check and rate limit, recording both for the response headers and the usage log. */
  const admit = Effect.fnUntraced(function*(org: Organization) {
    const slot = yield* RequestMeter
    slot.orgUuid = org.uuid
    const limits = { perMinute: org.perMinute, perWeek: org.perWeek }
    if (!org.isActive) {
      slot.decision = yield* limiter.peek(org.uuid, limits)
      return yield* new Forbidden({ message: "organization inactive" })
    }
    const decision = yield* limiter.consume(org.uuid, limits)
    slot.decision = decision
    if (!decision.admitted) return yield* new TooManyRequests({ message: "rate limit exceeded" })
    return CurrentOrg.of({ uuid: org.uuid, perMinute: org.perMinute, perWeek: org.perWeek })
  })

  return { findOrg, admit }
})

export const AuthenticationLive = Layer.effect(Authentication, Effect.gen(function*() {
  const { admit, findOrg } = yield* makeGate
  const jwt = yield* Jwt

  // The expected digest of an opened secret (Organizations hands out the same
  // Redacted while the row is unchanged); a rotated secret is a new object.
  const digests = new WeakMap<Redacted.Redacted<string>, string>()
  const expectedDigest = (secret: Redacted.Redacted<string>, orgUuid: string) => {
    let digest = digests.get(secret)
    if (digest === undefined) {
      digest = apiKeyDigest(Redacted.value(secret), orgUuid)
      digests.set(secret, digest)
    }
    return digest
  }

  const viaApiKey = Effect.fnUntraced(function*(header: string) {
    const key = parseApiKey(header)
    if (key === undefined) return yield* unauthorized("malformed ApiKey credential")
    const { org, secret } = yield* findOrg(key.orgUuid)
    if (!digestMatches(key.digest, expectedDigest(secret, org.uuid))) {
      return yield* unauthorized("invalid credentials")
    }
    return yield* admit(org)
  })

  const viaBearer = Effect.fnUntraced(function*(token: string) {
    // Spec 1 puts "credentials inactive or expired" under 403: the token was ours and good once.
    const orgUuid = yield* jwt.verify(token).pipe(
      Effect.mapError((e) => e.reason === "expired" ? new Forbidden({ message: e.message }) : unauthorized(e.message))
    )
    const { org } = yield* findOrg(orgUuid)
    return yield* admit(org)
  })

  // Both schemes share one decision per request: the builder tries the second
  // scheme when the first fails, and a request must be judged (and counted) once.
  const authenticate = Effect.gen(function*() {
    const slot = yield* RequestMeter
    if (slot.authFailure !== undefined) return yield* Effect.fail(slot.authFailure as Unauthorized)
    const request = yield* HttpServerRequest.HttpServerRequest
    const header = (request.headers.authorization ?? "").trim()
    const space = header.indexOf(" ")
    const scheme = space === -1 ? header.toLowerCase() : header.slice(0, space).toLowerCase()
    const value = space === -1 ? "" : header.slice(space + 1).trim()
    const outcome = scheme === "apikey"
      ? viaApiKey(`ApiKey ${value}`)
      : scheme === "bearer" && value !== ""
      ? viaBearer(value)
      : Effect.fail(unauthorized("missing credentials: send Authorization: ApiKey <org_uuid>:<hex> or Bearer <token>"))
    return yield* Effect.tapError(outcome, (error) => Effect.sync(() => (slot.authFailure = error)))
  })

  const middleware = (httpEffect: Effect.Effect<any, any, any>) =>
    Effect.flatMap(authenticate, (org) => Effect.provideService(httpEffect, CurrentOrg, org))

  return Authentication.of({ apiKey: middleware, bearer: middleware })
}))

export const SignedRequestLive = Layer.effect(SignedRequest, Effect.gen(function*() {
  const { admit, findOrg } = yield* makeGate
  return SignedRequest.of({
    sigv4: Effect.fnUntraced(function*(httpEffect) {
      const request = yield* HttpServerRequest.HttpServerRequest
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
      if (!check.verify(Redacted.value(secret))) return yield* unauthorized("signature does not match")
      const current = yield* admit(org)
      return yield* Effect.provideService(httpEffect, CurrentOrg, current)
    })
  })
}))
