import { Clock, Context, Effect, Layer, Redacted } from "effect"
import { countNonces } from "../metrics/GatewayMetrics.ts"
import { Organizations } from "../orgs/Organizations.ts"
import { BackendUnavailable } from "../servicekeys/ServiceKeys.ts"
import { checkNonce, issueNonce, type NonceCheck, nonceKey } from "./NonceToken.ts"

export const NONCE_LIFETIME_MS = 24 * 60 * 60 * 1000

export interface IssuedNonces {
  readonly nonces: ReadonlyArray<string>
  readonly count: number
  /** ISO 8601 UTC. */
  readonly expires_at: string
}

/** Looks up an organization's secret; fails when the backend cannot be reached. */
export type SecretLookup = (orgUuid: string) => Effect.Effect<Redacted.Redacted<string>, BackendUnavailable>

/**
 * Issues and verifies the signed nonces of sealed blocks (spec 2, Nonces).
 * The secret is read per call (the organization store has no cache); the
 * sealed-block step should batch its checks per request.
 */
export class Nonces extends Context.Service<Nonces, {
  issue(orgUuid: string, count: number): Effect.Effect<IssuedNonces, BackendUnavailable>
  check(orgUuid: string, nonce: string): Effect.Effect<NonceCheck, BackendUnavailable>
  /** Several nonces of one request, reading the organization's secret once. */
  checkAll(
    orgUuid: string,
    nonces: ReadonlyArray<string>
  ): Effect.Effect<ReadonlyMap<string, NonceCheck>, BackendUnavailable>
}>()("vdb/gateway/Nonces") {
  static readonly make = (secretOf: SecretLookup) =>
    Nonces.of({
      issue: Effect.fn("Nonces.issue")(function*(orgUuid: string, count: number) {
        const key = nonceKey(Redacted.value(yield* secretOf(orgUuid)))
        const expiresAt = (yield* Clock.currentTimeMillis) + NONCE_LIFETIME_MS
        const nonces = Array.from({ length: count }, () => issueNonce(key, orgUuid, expiresAt))
        // The token carries whole seconds; report the same instant.
        const expires_at = new Date(Math.floor(expiresAt / 1000) * 1000).toISOString()
        yield* countNonces("issued", count)
        return { nonces, count, expires_at }
      }),
      check: Effect.fn("Nonces.check")(function*(orgUuid: string, nonce: string) {
        const key = nonceKey(Redacted.value(yield* secretOf(orgUuid)))
        const outcome = checkNonce(key, orgUuid, nonce, yield* Clock.currentTimeMillis)
        yield* countNonces(outcome, 1)
        return outcome
      }),
      checkAll: Effect.fn("Nonces.checkAll")(function*(orgUuid: string, nonces: ReadonlyArray<string>) {
        const key = nonceKey(Redacted.value(yield* secretOf(orgUuid)))
        const now = yield* Clock.currentTimeMillis
        const checks = new Map(nonces.map((nonce) => [nonce, checkNonce(key, orgUuid, nonce, now)] as const))
        for (const outcome of checks.values()) yield* countNonces(outcome, 1)
        return checks
      })
    })

  /** Secrets from `Organizations`; an unknown organization cannot reach here (authentication ran first). */
  static readonly layer = Layer.effect(Nonces)(Effect.gen(function*() {
    const orgs = yield* Organizations
    return Nonces.make((orgUuid) =>
      orgs.secretOf(orgUuid).pipe(
        Effect.map(({ secret }) => secret),
        Effect.catchCause(() => Effect.fail(new BackendUnavailable({ backend: "authentication" })))
      )
    )
  }))
}
