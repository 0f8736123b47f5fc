import { Clock, Context, Effect, Layer, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import type { Organization } from "../../schema/Organization.ts"
import { Forbidden, TooManyRequests, Unauthorized } from "../../schema/ErrorBody.ts"
import { apiKeyDigest, digestMatches, parseApiKey } from "../auth/ApiKey.ts"
import { verifyTokenRequest } from "../auth/SigV4Token.ts"
import { Organizations } from "../orgs/Organizations.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import type { RateDecision } from "../ratelimit/Windows.ts"
import { Authentication, CurrentOrg, type MeterSlot, RequestMeter, SignedRequest } from "./ApiSecurity.ts"
import { VerifiedTokens } from "./VerifiedTokens.ts"

const unauthorized = (message: string) => new Unauthorized({ message })

/**
 * The decision for an organization with both limits 0: nothing is counted, so
 * nothing about it depends on the request (no counter, no clock). One shared
 * object, which `MeteringLive` recognises to send headers built once.
 */
export const UNLIMITED: RateDecision = {
  admitted: true,
  minute: { kind: "minute", limit: 0, used: 0, resetAt: 0 },
  week: { kind: "week", limit: 0, used: 0, resetAt: 0 },
  now: 0
}

/**
 * The organization comes from `Organizations.secretOf`'s per-process cache, which every change
 * (rotation, deactivation, limits) evicts in every process through the invalidation bus, so it
 * takes effect on the very next request without a database read per request.
 */
const makeGate = Effect.gen(function*() {
  const orgs = yield* Organizations
  const limiter = yield* RateLimiter

  const findOrg = (uuid: string) =>
    orgs.secretOf(uuid).pipe(
      Effect.catchTag("OrgError", () => Effect.fail(unauthorized("invalid credentials")))
    )

  // One per organization object (a changed organization is a new object), so an admitted
  // request of an unlimited organization allocates nothing here.
  const principals = new WeakMap<Organization, CurrentOrg["Service"]>()
  const principalOf = (org: Organization) => {
    let principal = principals.get(org)
    if (principal === undefined) {
      principal = CurrentOrg.of({ uuid: org.uuid, perMinute: org.perMinute, perWeek: org.perWeek })
      principals.set(org, principal)
    }
    return principal
  }

  /** Active check and rate limit, recording both for the response headers and the usage log. */
  const admit = (slot: MeterSlot, org: Organization): Effect.Effect<CurrentOrg["Service"], Forbidden | TooManyRequests> => {
    slot.orgUuid = org.uuid
    const limits = { perMinute: org.perMinute, perWeek: org.perWeek }
    if (!org.isActive) {
      return Effect.flatMap(limiter.peek(org.uuid, limits), (decision) => {
        slot.decision = decision
        return Effect.fail(new Forbidden({ message: "organization inactive" }))
      })
    }
    // Both limits 0: no counter is touched (as `RateLimiter.consume` does), without its clock read.
    if (limits.perMinute === 0 && limits.perWeek === 0) {
      slot.decision = UNLIMITED
      return Effect.succeed(principalOf(org))
    }
    return Effect.flatMap(limiter.consume(org.uuid, limits), (decision) => {
      slot.decision = decision
      return decision.admitted ? Effect.succeed(principalOf(org)) : Effect.fail(new TooManyRequests({ message: "rate limit exceeded" }))
    })
  }

  return { findOrg, admit }
})

export const AuthenticationLive = Layer.effect(Authentication, Effect.gen(function*() {
  const { admit, findOrg } = yield* makeGate
  const tokens = yield* VerifiedTokens

  // The expected digest of an opened secret (Organizations hands out the same
  // Redacted while its entry is cached); a rotated secret is a new object. A
  // repeated ApiKey verification is two map lookups and a constant-time compare.
  const digests = new WeakMap<Redacted.Redacted<string>, string>()
  const expectedDigest = (secret: Redacted.Redacted<string>, orgUuid: string) => {
    let digest = digests.get(secret)
    if (digest === undefined) {
      digest = apiKeyDigest(Redacted.value(secret), orgUuid)
      digests.set(secret, digest)
    }
    return digest
  }

  const viaApiKey = (slot: MeterSlot, header: string) => {
    const key = parseApiKey(header)
    if (key === undefined) return Effect.fail(unauthorized("malformed ApiKey credential"))
    return Effect.flatMap(
      findOrg(key.orgUuid),
      ({ org, secret }): Effect.Effect<CurrentOrg["Service"], Unauthorized | Forbidden | TooManyRequests> =>
        digestMatches(key.digest, expectedDigest(secret, org.uuid))
          ? admit(slot, org)
          : Effect.fail(unauthorized("invalid credentials"))
    )
  }

  const viaBearer = (slot: MeterSlot, token: string, nowMillis: number) => {
    const orgUuid = tokens.orgOf(token, nowMillis).pipe(
      // Spec 1 puts "credentials inactive or expired" under 403: the token was ours and good once.
      Effect.mapError((e) => e.reason === "expired" ? new Forbidden({ message: e.message }) : unauthorized(e.message))
    )
    return orgUuid.pipe(
      Effect.flatMap(findOrg),
      Effect.flatMap(({ org }) => admit(slot, org))
    )
  }

  // Both schemes share one decision per request: the builder tries the second
  // scheme when the first fails, and a request must be judged (and counted) once.
  // Read straight from the fiber's context: this runs on every API request.
  const middleware = (httpEffect: Effect.Effect<any, any, any>) =>
    Effect.withFiber((fiber) => {
      const slot = Context.getUnsafe(fiber.context, RequestMeter)
      if (slot.authFailure !== undefined) return Effect.fail(slot.authFailure as Unauthorized)
      const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
      const header = (request.headers.authorization ?? "").trim()
      const space = header.indexOf(" ")
      const scheme = space === -1 ? header.toLowerCase() : header.slice(0, space).toLowerCase()
      const value = space === -1 ? "" : header.slice(space + 1).trim()
      const outcome = scheme === "apikey"
        ? viaApiKey(slot, `ApiKey ${value}`)
        : scheme === "bearer" && value !== ""
        ? viaBearer(slot, value, fiber.getRef(Clock.Clock).currentTimeMillisUnsafe())
        : Effect.fail(unauthorized("missing credentials: send Authorization: ApiKey <org_uuid>:<hex> or Bearer <token>"))
      return Effect.matchEffect(outcome, {
        onFailure: (error) => {
          slot.authFailure = error
          return Effect.fail(error)
        },
        onSuccess: (org) => Effect.provideService(httpEffect, CurrentOrg, org)
      })
    })

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
      const current = yield* admit(yield* RequestMeter, org)
      return yield* Effect.provideService(httpEffect, CurrentOrg, current)
    })
  })
}))
