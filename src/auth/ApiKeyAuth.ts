import { Context, Data, Effect, Layer, Redacted } from "effect"
import type { Organization } from "../../schema/Organization.ts"
import { Organizations } from "../orgs/Organizations.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import type { RateDecision } from "../ratelimit/Windows.ts"
import { UsageLog } from "../usage/UsageLog.ts"
import { apiKeyDigest, digestMatches, parseApiKey } from "./ApiKey.ts"

/** An organization and its current secret, as `Organizations.secretOf` hands them out. */
export interface SignedIn {
  readonly org: Organization
  readonly secret: Redacted.Redacted<string>
}

/**
 * Why a request is not let in, for each surface to answer in its own dialect:
 * - `malformed`: the credential is not of the `ApiKey <uuid>:<hex>` shape;
 * - `invalid`: no such organization, or not its key: one reason for both, so no answer tells
 *   whether a UUID exists;
 * - `inactive`: the organization is deactivated;
 * - `limited`: its limits have no room for the request.
 * `decision` (inactive, limited): the organization's counters, for the rate-limit headers.
 */
export class SignInRefused extends Data.TaggedError("SignInRefused")<{
  readonly reason: "malformed" | "invalid" | "inactive" | "limited"
  readonly decision?: RateDecision | undefined
}> {}

/**
 * The decision for an organization with both limits 0: nothing is counted, so nothing about it
 * depends on the request (no counter, no clock). One shared object, which surfaces recognise to
 * send rate-limit headers built once.
 */
export const UNLIMITED: RateDecision = {
  admitted: true,
  minute: { kind: "minute", limit: 0, used: 0, resetAt: 0 },
  week: { kind: "week", limit: 0, used: 0, resetAt: 0 },
  now: 0
}

const MAX_LOGGED = 200
const clip = (value: string | undefined) => value === undefined ? null : value.slice(0, MAX_LOGGED)

/**
 * What the usage log reads of a request: its method and `User-Agent`. A platform request is one;
 * so is what a listener below the router (`src/api/QueryListener.ts`) makes of a Node request.
 */
export interface LoggedRequest {
  readonly method: string
  readonly headers: { readonly [name: string]: string | ReadonlyArray<string> | undefined }
}

const userAgentOf = (request: LoggedRequest) => {
  const value = request.headers["user-agent"]
  return typeof value === "string" ? value : undefined
}

/** Neither limit set: no counter is touched and no clock read. */
export const isUnmetered = (org: Organization) => org.perMinute === 0 && org.perWeek === 0

/**
 * Signing in with an organization's API key, and what follows for every request of an
 * organization, whichever surface it reaches (the API's HttpApi and its `/vuln` fast path, the
 * gateway's manage API, MCP): its state, its limits, and the usage log. Surfaces answer the
 * refusals in their own dialects; the decisions are made here once.
 *
 * On the hot path (a cached organization, a repeated key, no limits) nothing here waits or
 * allocates: the organization comes from `Organizations.secretOf`'s per-process cache, which
 * every change (rotation, deactivation, limits) evicts in every process through the
 * invalidation bus, and the expected digest and the verified answer are kept per cached entry.
 */
export class ApiKeyAuth extends Context.Service<ApiKeyAuth, {
  /** The organization an `ApiKey <uuid>:<hex>` credential (the whole header value) names, when it is its current key. */
  verify(credential: string): Effect.Effect<SignedIn, SignInRefused>
  /**
   * The organization a credential verified elsewhere names (a token's or a signature's): an
   * unknown one is `invalid`, as for a key.
   */
  organization(orgUuid: string): Effect.Effect<SignedIn, SignInRefused>
  /** Refuses a deactivated organization (`inactive`, with its counters as they are, not counted). */
  active(org: Organization): Effect.Effect<void, SignInRefused>
  /**
   * Admits `cost` requests (default 1) of an active organization, all or none, and counts them;
   * `UNLIMITED` when neither limit is set. Refused: `inactive` or `limited`, nothing counted.
   */
  admit(org: Organization, cost?: number): Effect.Effect<RateDecision, SignInRefused>
  /**
   * Logs a request answered now (`started` from `performance.now()`), with client text clipped.
   * Never waits: a queue offer, nothing on the response path waits for the database.
   */
  record(
    request: LoggedRequest,
    orgUuid: string | null,
    route: string,
    identifier: string | undefined,
    status: number,
    started: number,
    at: Date,
    clientAddress: string | null
  ): void
}>()("vdb/auth/ApiKeyAuth") {
  static readonly layer = Layer.effect(
    ApiKeyAuth,
    Effect.gen(function*() {
      const orgs = yield* Organizations
      const limiter = yield* RateLimiter
      const usage = yield* UsageLog

      const malformed = () => Effect.fail(new SignInRefused({ reason: "malformed" }))
      const invalid = () => Effect.fail(new SignInRefused({ reason: "invalid" }))

      // Per cached entry (a rotation or any change makes a new one): the digest its key must carry,
      // and the answer for it, so a repeated key is a map lookup and a constant-time compare.
      const verified = new WeakMap<SignedIn, { readonly digest: string; readonly answer: Effect.Effect<SignedIn> }>()
      const verifiedOf = (entry: SignedIn) => {
        let known = verified.get(entry)
        if (known === undefined) {
          known = { digest: apiKeyDigest(Redacted.value(entry.secret), entry.org.uuid), answer: Effect.succeed(entry) }
          verified.set(entry, known)
        }
        return known
      }

      const verify = (credential: string): Effect.Effect<SignedIn, SignInRefused> => {
        const key = parseApiKey(credential)
        if (key === undefined) return malformed()
        return Effect.matchEffect(orgs.secretOf(key.orgUuid), {
          onFailure: invalid,
          onSuccess: (entry) => {
            const known = verifiedOf(entry)
            return digestMatches(key.digest, known.digest) ? known.answer : invalid()
          }
        })
      }

      const organization = (orgUuid: string) => Effect.catchTag(orgs.secretOf(orgUuid), "OrgError", invalid)

      const inactive = (org: Organization) =>
        Effect.flatMap(
          limiter.peek(org.uuid, org),
          (decision) => Effect.fail(new SignInRefused({ reason: "inactive", decision }))
        )

      const unlimited = Effect.succeed(UNLIMITED)

      const admit = (org: Organization, cost = 1): Effect.Effect<RateDecision, SignInRefused> => {
        if (!org.isActive) return inactive(org)
        // As `RateLimiter.consume` would decide, without its clock read.
        if (isUnmetered(org)) return unlimited
        return Effect.flatMap(limiter.consume(org.uuid, org, cost), (decision) =>
          decision.admitted
            ? Effect.succeed(decision)
            : Effect.fail(new SignInRefused({ reason: "limited", decision })))
      }

      return ApiKeyAuth.of({
        verify,
        organization,
        active: (org) => org.isActive ? Effect.void : inactive(org),
        admit,
        record: (request, orgUuid, route, identifier, status, started, at, clientAddress) =>
          usage.record({
            orgUuid,
            method: request.method,
            route,
            identifier: clip(identifier),
            status,
            latencyMs: performance.now() - started,
            clientAddress,
            userAgent: clip(userAgentOf(request)),
            at
          })
      })
    })
  )
}
