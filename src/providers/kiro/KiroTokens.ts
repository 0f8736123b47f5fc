import { Clock, Context, Deferred, Effect, Layer, Metric, Redacted } from "effect"
import { ProviderCredentialInvalid, type UpstreamAuthFailed } from "../../../schema/GatewayError.ts"
import { isRefused, type KiroSignIn, parseKiroSignIn } from "../../../schema/KiroSignIn.ts"
import type { BackendUnavailable } from "../../cache/BackendUnavailable.ts"
import { UpstreamClient } from "../../http/UpstreamClient.ts"
import { ProviderKeyMissing, ProviderKeys, type ProviderKeyUnreadable } from "../../vault/ProviderKeys.ts"
import { type KiroAuthEndpoints, kiroAuthEndpoints, refreshSignIn } from "./KiroAuth.ts"

/** Calls to Kiro's token endpoint, by outcome (docs/operations.md): one per lease across processes. */
const refreshesOf = (outcome: string) =>
  Metric.counter("vdb_gateway_kiro_refreshes_total", {
    description: "Kiro access-token refreshes this process made, by outcome: ok or failed",
    incremental: true,
    attributes: { outcome }
  })
const refreshOk = refreshesOf("ok")
const refreshFailed = refreshesOf("failed")

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
 * When to stop using the access token a stored sign-in carries (written by a process that refreshed
 * it, or given with the sign-in), by the same rule as a token minted here over what is left of its
 * life; undefined when it carries none, it has expired, or its `expiresAt` is no date.
 */
const storedTokenRefreshAt = (signIn: KiroSignIn, now: number): number | undefined => {
  if (signIn.accessToken === undefined || signIn.expiresAt === undefined) return undefined
  const expires = Date.parse(signIn.expiresAt)
  if (!Number.isFinite(expires) || expires <= now) return undefined
  return refreshAtOf(now, (expires - now) / 1000)
}

/**
 * Access tokens for the Kiro API, minted from the organization's sign-in in
 * the vault and kept until shortly before they expire. One refresh per
 * organization at a time, across processes: concurrent requests here wait for
 * the same call (it runs detached, so a client that goes away does not abort
 * it for the others), and the call runs under the vault's lease on the
 * sign-in (`ProviderKeys.exclusive`, respected by every process of the
 * database), after reading the sign-in as stored then. Every refresh writes
 * the sign-in back with the new access token and its expiry (and a rotated
 * refresh token: the old one no longer works), so another process uses that
 * token rather than refreshing again, and one that was waiting for the lease
 * finds it there; unless the sign-in was deleted or replaced during the call,
 * which then stands. Tokens stay `Redacted`; neither they nor the sign-in
 * reach a log or an error.
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
      const inflight = new Map<string, Deferred.Deferred<KiroAccess, KiroTokenFailure>>()
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

      /** Uses the access token a stored sign-in carries, while it lasts. */
      const adopt = (orgUuid: string, signIn: KiroSignIn, text: string, now: number): KiroAccess | undefined => {
        const refreshAt = storedTokenRefreshAt(signIn, now)
        if (refreshAt === undefined) return undefined
        const access: KiroAccess = { token: Redacted.make(signIn.accessToken!), profileArn: signIn.profileArn }
        minted.set(orgUuid, { access, refreshAt, signIn, stored: new Set([text]) })
        return access
      }

      /** One refresh, under the vault's lease on the sign-in; `signIn` (stored as `text`) is what this process holds. */
      const mint = (orgUuid: string, signIn: KiroSignIn, text: string) =>
        providerKeys.exclusive(orgUuid, KIRO, (stored) =>
          Effect.gen(function*() {
            if (stored === undefined) return yield* new ProviderKeyMissing({ provider: KIRO })
            const storedText = Redacted.value(stored)
            // Now, not when the request asked: it may have waited for the lease.
            const now = yield* Clock.currentTimeMillis
            const previous = minted.get(orgUuid)
            let from = signIn
            let fromText = text
            if (previous !== undefined && previous.stored.has(storedText)) {
              // What this process already holds for the stored value, minted or taken from the store by
              // another request while this one waited for the lease: still good, it is used; due, the
              // refresh goes from the newest sign-in held for it (a rotated refresh token included),
              // never from the older one this request read. (An attack found the latter: a request that
              // had waited refreshed with a refresh token the other process had already spent.)
              if (now < previous.refreshAt) return [previous.access, undefined] as const
              from = previous.signIn
              fromText = storedText
            } else if (storedText !== text) {
              // Stored since this process read it, by another process's refresh or as a new sign-in: that
              // is the sign-in now, and a token it carries is used instead of refreshing again.
              const current = parseKiroSignIn(storedText)
              if (isRefused(current)) return yield* credentialInvalid
              const adopted = adopt(orgUuid, current, storedText, now)
              if (adopted !== undefined) return [adopted, undefined] as const
              from = current
              fromText = storedText
            }
            const answer = yield* refreshSignIn(upstream, endpoints, from).pipe(
              Effect.tapError(() => Metric.update(refreshFailed, 1)),
              Effect.tap(Metric.update(refreshOk, 1))
            )
            const profileArn = answer.profileArn ?? from.profileArn
            const current: KiroSignIn = {
              ...from,
              refreshToken: answer.refreshToken ?? from.refreshToken,
              ...(profileArn ? { profileArn } : {}),
              accessToken: Redacted.value(answer.accessToken),
              expiresAt: new Date(now + answer.expiresInSeconds * 1000).toISOString()
            }
            const access: KiroAccess = { token: answer.accessToken, profileArn }
            const written = JSON.stringify(current)
            const values = new Set([fromText, storedText, written])
            // Refreshed from a superseded value: that value still stands for this sign-in.
            if (previous !== undefined && previous.signIn === from) {
              for (const value of previous.stored) values.add(value)
            }
            minted.set(orgUuid, {
              access,
              refreshAt: refreshAtOf(now, answer.expiresInSeconds),
              signIn: current,
              stored: values
            })
            return [access, Redacted.make(written)] as const
          }))

      /** Joins the refresh in flight for this organization, or starts one. */
      const refreshOnce = (orgUuid: string, signIn: KiroSignIn, text: string) => {
        const running = inflight.get(orgUuid)
        if (running !== undefined) return Deferred.await(running)
        const deferred = Deferred.makeUnsafe<KiroAccess, KiroTokenFailure>()
        inflight.set(orgUuid, deferred)
        const settle = Effect.exit(mint(orgUuid, signIn, text)).pipe(
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
        // Another process's refresh, or a sign-in stored with its token: used while it lasts.
        if (!sameSignIn) {
          const adopted = adopt(orgUuid, signIn, text, now)
          if (adopted !== undefined) return adopted
        }
        // A vault that still shows the refresh token we rotated away from: refresh with the new one we hold.
        return yield* refreshOnce(orgUuid, sameSignIn ? known.signIn : signIn, text)
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
