import { Context, Effect, Layer } from "effect"
import { Jwt, type JwtInvalid, type TokenClaims } from "./Jwt.ts"

const MAX_TOKENS = 10_000
/** Refused tokens remembered: few, and short ones only (ours are about 400 characters), so a flood of distinct ones costs little memory. */
const MAX_REFUSED = 1_000
const MAX_REFUSED_LENGTH = 2_048

/**
 * Bearer tokens that verified, until their `exp`: a client sends the same token for up to 15
 * minutes, and an HS512 verification costs about as much as the rest of the request. Only a token
 * that verified is kept (same bytes, same signature); an expired one is verified again, which gives
 * `expired`. One per process, shared by the HttpApi's authentication and the `/vuln` fast path, so a
 * token is verified once whichever path sees it first. What is kept is only that the signature is
 * ours: each path still looks the organization up per request and judges it (the secret the token
 * was signed in with is still the current one, `signedInWith`; active; limits), so a rotation or
 * deactivation applies to a remembered token on its next request.
 *
 * A refusal is remembered too (a bad signature or an expiry does not heal): the `/vuln` fast
 * path hands a token it cannot accept to the HttpApi, which verified the same bad token a second
 * time, and a client repeating a bad token paid a verification each time.
 */
export class VerifiedTokens extends Context.Service<VerifiedTokens, {
  /** The claims of a token: remembered until its `exp`, else verified now (and remembered). */
  claimsOf(token: string, nowMillis: number): Effect.Effect<TokenClaims, JwtInvalid>
}>()("vdb/auth/VerifiedTokens") {
  static readonly layer = Layer.effect(
    VerifiedTokens,
    Effect.gen(function*() {
      const jwt = yield* Jwt
      const verified = new Map<string, TokenClaims>()
      const refused = new Map<string, JwtInvalid>()
      const remember = (token: string, claims: TokenClaims) => {
        if (verified.size >= MAX_TOKENS) verified.delete(verified.keys().next().value!)
        verified.set(token, claims)
      }
      const rememberRefusal = (token: string, error: JwtInvalid) => {
        if (token.length > MAX_REFUSED_LENGTH) return
        if (refused.size >= MAX_REFUSED) refused.delete(refused.keys().next().value!)
        refused.set(token, error)
      }
      return VerifiedTokens.of({
        claimsOf: (token, nowMillis) => {
          const hit = verified.get(token)
          if (hit !== undefined && hit.exp > Math.floor(nowMillis / 1000)) return Effect.succeed(hit)
          const no = refused.get(token)
          if (no !== undefined) return Effect.fail(no)
          return jwt.verify(token).pipe(
            Effect.tap((claims) => Effect.sync(() => remember(token, claims))),
            Effect.tapError((error) => Effect.sync(() => rememberRefusal(token, error)))
          )
        }
      })
    })
  )
}
