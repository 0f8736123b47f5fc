import { Context, Effect, Layer } from "effect"
import { Jwt, type JwtInvalid, type TokenClaims } from "../auth/Jwt.ts"

const MAX_TOKENS = 10_000

/**
 * Bearer tokens that verified, until their `exp`: a client sends the same token for up to 15
 * minutes, and an HS512 verification costs about as much as the rest of the request. Only a token
 * that verified is kept (same bytes, same signature); an expired one is verified again, which gives
 * `expired`. One per process, shared by the HttpApi's authentication and the `/vuln` fast path, so a
 * token is verified once whichever path sees it first. What is kept is only that the signature is
 * ours: each path still looks the organization up per request and judges it (the secret the token
 * was signed in with is still the current one, `signedInWith`; active; limits), so a rotation or
 * deactivation applies to a remembered token on its next request.
 */
export class VerifiedTokens extends Context.Service<VerifiedTokens, {
  /** The claims of a token: remembered until its `exp`, else verified now (and remembered). */
  claimsOf(token: string, nowMillis: number): Effect.Effect<TokenClaims, JwtInvalid>
}>()("vdb/api/VerifiedTokens") {
  static readonly layer = Layer.effect(VerifiedTokens, Effect.gen(function*() {
    const jwt = yield* Jwt
    const verified = new Map<string, TokenClaims>()
    const remember = (token: string, claims: TokenClaims) => {
      if (verified.size >= MAX_TOKENS) verified.delete(verified.keys().next().value!)
      verified.set(token, claims)
    }
    return VerifiedTokens.of({
      claimsOf: (token, nowMillis) => {
        const hit = verified.get(token)
        return hit !== undefined && hit.exp > Math.floor(nowMillis / 1000)
          ? Effect.succeed(hit)
          : Effect.tap(jwt.verify(token), (claims) => Effect.sync(() => remember(token, claims)))
      }
    })
  }))
}
