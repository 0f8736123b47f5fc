import { Context, Effect, Layer } from "effect"
import { Jwt, type JwtInvalid } from "../auth/Jwt.ts"

const MAX_TOKENS = 10_000

/** `exp` of a token that already verified (so its payload is ours and well-formed). */
const expOf = (token: string): number | undefined => {
  try {
    const exp = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8")).exp
    return typeof exp === "number" ? exp : undefined
  } catch {
    return undefined
  }
}

/**
 * Bearer tokens that verified, until their `exp`: a client sends the same token for up to 15
 * minutes, and an HS512 verification costs about as much as the rest of the request. Only a token
 * that verified is kept (same bytes, same signature); an expired one is verified again, which gives
 * `expired`. One per process, shared by the HttpApi's authentication and the `/vuln` fast path, so a
 * token is verified once whichever path sees it first. The organization is still looked up (and
 * judged: active, limits) per request by each path.
 */
export class VerifiedTokens extends Context.Service<VerifiedTokens, {
  /** The organization a token names: remembered until its `exp`, else verified now (and remembered). */
  orgOf(token: string, nowMillis: number): Effect.Effect<string, JwtInvalid>
}>()("vdb/api/VerifiedTokens") {
  static readonly layer = Layer.effect(VerifiedTokens, Effect.gen(function*() {
    const jwt = yield* Jwt
    const verified = new Map<string, { readonly orgUuid: string; readonly expSeconds: number }>()
    const remember = (token: string, orgUuid: string) => {
      const exp = expOf(token)
      if (exp === undefined) return
      if (verified.size >= MAX_TOKENS) verified.delete(verified.keys().next().value!)
      verified.set(token, { orgUuid, expSeconds: exp })
    }
    return VerifiedTokens.of({
      orgOf: (token, nowMillis) => {
        const hit = verified.get(token)
        return hit !== undefined && hit.expSeconds > Math.floor(nowMillis / 1000)
          ? Effect.succeed(hit.orgUuid)
          : Effect.tap(jwt.verify(token), (uuid) => Effect.sync(() => remember(token, uuid)))
      }
    })
  }))
}
