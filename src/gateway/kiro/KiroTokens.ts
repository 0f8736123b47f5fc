import { Clock, Context, Deferred, Effect, Layer, Redacted } from "effect"
import { ProviderCredentialInvalid, type UpstreamAuthFailed } from "../../../schema/GatewayError.ts"
import { isRefused, type KiroSignIn, parseKiroSignIn } from "../../../schema/KiroSignIn.ts"
import { type ProviderKeyMissing, ProviderKeys, type ProviderKeyUnreadable } from "../../vault/ProviderKeys.ts"
import type { BackendUnavailable } from "../keys/ServiceKeyErrors.ts"
import { UpstreamClient } from "../relay/UpstreamClient.ts"
import { type KiroAuthEndpoints, kiroAuthEndpoints, refreshSignIn } from "./KiroAuth.ts"

/** What a Kiro call needs from the sign-in. */
export interface KiroAccess {
  readonly token: Redacted.Redacted<string>
  readonly profileArn: string | undefined
}

export type KiroTokenFailure =
  | ProviderKeyMissing
  | ProviderKeyUnreadable
  | BackendUnavailable
  | ProviderCredentialInvalid
  | UpstreamAuthFailed

/** A minted token, and the sign-in it came from (after any rotation). */
interface Minted {
  readonly access: KiroAccess
  /** Clock time from which the token is refreshed rather than used. */
  readonly refreshAt: number
  readonly signIn: KiroSignIn
  /**
   * The stored values this token stands for: the one it was minted from and,
   * after a rotation, the one written back (the vault may answer with either
   * for a while). Any other value is a new sign-in.
   */
  readonly stored: ReadonlySet<string>
}

/** Refresh this long before the provider's expiry, so a token never expires in flight... */
const EARLY_MS = 60_000

/** ...unless the token lives so briefly that would leave nothing: then at half its life. */
export const refreshAtOf = (now: number, expiresInSeconds: number): number => {
  const lifetime = expiresInSeconds * 1000
  return now + Math.max(lifetime - EARLY_MS, lifetime / 2)
}

const KIRO = "kiro"
const credentialInvalid = new ProviderCredentialInvalid({ provider: KIRO })

/**
 * Access tokens for the Kiro API, minted from the organization's sign-in in
 * the vault and kept until shortly before they expire. One refresh per
 * organization at a time: concurrent requests wait for the same call (it
 * runs detached, so a client that goes away does not abort it for the
 * others). A refresh token the provider rotates is written back to the vault
 * at once: the old one no longer works. Tokens stay `Redacted`; neither they
 * nor the sign-in reach a log or an error.
 */
export class KiroTokens extends Context.Service<KiroTokens, {
  access(orgUuid: string): Effect.Effect<KiroAccess, KiroTokenFailure>
  /** The provider refused this token before its time: the next request mints another. */
  invalidate(orgUuid: string, token: Redacted.Redacted<string>): Effect.Effect<void>
}>()("vdb/gateway/kiro/KiroTokens") {
  static readonly makeWith = (endpoints: KiroAuthEndpoints) =>
    Effect.gen(function*() {
      const providerKeys = yield* ProviderKeys
      const upstream = yield* UpstreamClient
      const minted = new Map<string, Minted>()
      const inflight = new Map<string, Deferred.Deferred<KiroAccess, UpstreamAuthFailed>>()
      // The vault hands back the same string until the key changes: parse each stored value once.
      const parsed = new Map<string, { readonly text: string; readonly signIn: KiroSignIn }>()

      const storedSignIn = Effect.fnUntraced(function*(orgUuid: string) {
        const text = Redacted.value(yield* providerKeys.get(orgUuid, KIRO))
        const known = parsed.get(orgUuid)
        if (known !== undefined && known.text === text) return known
        const signIn = parseKiroSignIn(text)
        if (isRefused(signIn)) return yield* credentialInvalid
        const entry = { text, signIn }
        parsed.set(orgUuid, entry)
        return entry
      })

      const mint = Effect.fnUntraced(function*(orgUuid: string, signIn: KiroSignIn, text: string, now: number) {
        const answer = yield* refreshSignIn(upstream, endpoints, signIn)
        const profileArn = answer.profileArn ?? signIn.profileArn
        const rotated = answer.refreshToken !== undefined && answer.refreshToken !== signIn.refreshToken
        const current: KiroSignIn = rotated || profileArn !== signIn.profileArn
          ? { ...signIn, refreshToken: answer.refreshToken ?? signIn.refreshToken, ...(profileArn ? { profileArn } : {}) }
          : signIn
        const access: KiroAccess = { token: answer.accessToken, profileArn }
        const written = current === signIn ? undefined : JSON.stringify(current)
        const previous = minted.get(orgUuid)
        const stored = new Set([text, ...(written === undefined ? [] : [written])])
        // Refreshed from a superseded value: that value still stands for this sign-in.
        if (previous !== undefined && previous.signIn === signIn) for (const value of previous.stored) stored.add(value)
        minted.set(orgUuid, { access, refreshAt: refreshAtOf(now, answer.expiresInSeconds), signIn: current, stored })
        if (written !== undefined) {
          yield* providerKeys.set(orgUuid, KIRO, Redacted.make(written)).pipe(
            // The token in memory still works; the next rotation tries again.
            Effect.catchCause(() => Effect.logError("kiro: the rotated sign-in could not be stored in the vault"))
          )
        }
        return access
      })

      /** Joins the refresh in flight for this organization, or starts one. */
      const refreshOnce = (orgUuid: string, signIn: KiroSignIn, text: string, now: number) => {
        const running = inflight.get(orgUuid)
        if (running !== undefined) return Deferred.await(running)
        const deferred = Deferred.makeUnsafe<KiroAccess, UpstreamAuthFailed>()
        inflight.set(orgUuid, deferred)
        const settle = Effect.exit(mint(orgUuid, signIn, text, now)).pipe(
          Effect.flatMap((exit) =>
            Effect.sync(() => {
              inflight.delete(orgUuid)
              Deferred.doneUnsafe(deferred, exit)
            })
          )
        )
        return Effect.andThen(Effect.forkDetach(settle), Deferred.await(deferred))
      }

      const access = Effect.fnUntraced(function*(orgUuid: string) {
        const { signIn, text } = yield* storedSignIn(orgUuid)
        const now = yield* Clock.currentTimeMillis
        const known = minted.get(orgUuid)
        const sameSignIn = known !== undefined && known.stored.has(text)
        if (sameSignIn && now < known.refreshAt) return known.access
        // A vault that still shows the refresh token we rotated away from: refresh with the new one we hold.
        return yield* refreshOnce(orgUuid, sameSignIn ? known.signIn : signIn, text, now)
      })

      const invalidate = (orgUuid: string, token: Redacted.Redacted<string>) =>
        Effect.sync(() => {
          const known = minted.get(orgUuid)
          if (known !== undefined && known.access.token === token) minted.set(orgUuid, { ...known, refreshAt: 0 })
        })

      return KiroTokens.of({ access, invalidate })
    })

  /** Needs `ProviderKeys` and `UpstreamClient`; reads `VDB_PROVIDER_KIRO_AUTH_URL` and `VDB_PROVIDER_KIRO_OIDC_URL`. */
  static readonly layer = Layer.effect(KiroTokens)(Effect.flatMap(kiroAuthEndpoints, KiroTokens.makeWith))
}
