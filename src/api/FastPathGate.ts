import { Effect, Option } from "effect"
import { HttpServerResponse } from "effect/http"
import type { Organization } from "../../schema/Organization.ts"
import { ApiKeyAuth, isUnmetered, type LoggedRequest } from "../auth/ApiKeyAuth.ts"
import { signedInWith } from "../auth/Jwt.ts"
import { VerifiedTokens } from "../auth/VerifiedTokens.ts"
import { rateLimitHeaders } from "../ratelimit/Windows.ts"

/**
 * What the fast paths (`VulnFastPath`, `QueryFastPath`, `QueryListener`) share: the authentication, admission
 * and usage-log entry the HttpApi gives every request, decided the same way (`ApiKeyAuth`,
 * `VerifiedTokens`, the same `RateLimiter`), for a request whose answer is already cached. Any
 * doubt (another scheme, a wrong key, a token that does not verify or was signed in with a secret
 * rotated since, an inactive organization, no cached answer, a refusal, a lookup that failed) is
 * the HttpApi's to answer: `fallThrough` is returned unchanged.
 */

/** A cached answer's responses, built on first use by the caller (and kept by it). */
export interface FastResponses {
  /** The finished response of an organization with both limits 0 (its rate-limit headers included). */
  readonly unlimited: () => HttpServerResponse.HttpServerResponse
  /** The response a limited organization's decision's rate-limit headers go on. */
  readonly bare: () => HttpServerResponse.HttpServerResponse
}

export interface FastRequest<A, E, R> {
  readonly request: LoggedRequest
  /** The `Authorization` header, present. */
  readonly authorization: string
  /** The HttpApi's path for this request (or what says to take it). */
  readonly fallThrough: Effect.Effect<A, E, R>
  /** The usage log's route and identifier, as the HttpApi's metering records them. */
  readonly route: string
  readonly identifier: string | undefined
  readonly started: number
  readonly atMillis: number
  readonly clientAddress: () => string | null
  /** The answer for an authenticated, active organization; undefined to fall through (a miss). */
  readonly responses: (org: Organization) => FastResponses | undefined
}

/**
 * A lookup's value, or none when it failed in any way, a lost database included (a defect): the
 * request then takes the HttpApi's path, which answers the failure in the API's dialect (401, or
 * 503 while the database cannot be reached).
 */
export const lookup = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<Option.Option<A>, never, R> =>
  Effect.catchCause(Effect.asSome(effect), () => Effect.succeedNone)

export const makeFastPathGate = Effect.gen(function*() {
  const auth = yield* ApiKeyAuth
  const tokens = yield* VerifiedTokens

  return <A, E, R>(r: FastRequest<A, E, R>): Effect.Effect<HttpServerResponse.HttpServerResponse | A, E, R> => {
    const sent = (orgUuid: string, response: HttpServerResponse.HttpServerResponse) => {
      auth.record(
        r.request,
        orgUuid,
        r.route,
        r.identifier,
        response.status,
        r.started,
        new Date(r.atMillis),
        r.clientAddress()
      )
      return response
    }

    /** The answer for an authenticated organization: active, a cached answer, admitted by its limits. */
    const answer = (org: Organization): Effect.Effect<HttpServerResponse.HttpServerResponse | A, E, R> => {
      // Refused (by `ApiKeyAuth.admit`, on the HttpApi's path): answered there, with the counters it reads.
      if (!org.isActive) return r.fallThrough
      const responses = r.responses(org)
      if (responses === undefined) return r.fallThrough
      // Nothing to count: the finished response, without a step through the admission's effect.
      if (isUnmetered(org)) return Effect.succeed(sent(org.uuid, responses.unlimited()))
      // A refusal, or a counter the database could not update, is the HttpApi's to answer in its dialect.
      return Effect.matchCauseEffect(auth.admit(org), {
        onFailure: () => r.fallThrough,
        onSuccess: (decision) =>
          Effect.succeed(sent(org.uuid, HttpServerResponse.setHeaders(responses.bare(), rateLimitHeaders(decision))))
      })
    }

    const authorization = r.authorization
    if (/^apikey /i.test(authorization)) {
      return Effect.matchCauseEffect(auth.verify(`ApiKey ${authorization.slice(7).trim()}`), {
        onFailure: () => r.fallThrough,
        onSuccess: ({ org }) => answer(org)
      })
    }
    if (/^bearer /i.test(authorization)) {
      const token = authorization.slice(7).trim()
      if (token === "") return r.fallThrough
      // A token that does not verify (or has expired) is the HttpApi's to refuse in its dialect.
      // So is one signed in with a secret rotated since (`signedInWith`, against the current secret).
      return Effect.flatMap(lookup(tokens.claimsOf(token, r.atMillis)), (claims) =>
        Option.isNone(claims)
          ? r.fallThrough
          : Effect.flatMap(lookup(auth.organization(claims.value.orgUuid)), (found) =>
            Option.isNone(found) || !signedInWith(claims.value, found.value.secret)
              ? r.fallThrough
              : answer(found.value.org)))
    }
    return r.fallThrough
  }
})
