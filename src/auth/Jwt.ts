import { Clock, Context, Effect, Layer, Redacted, Schema } from "effect"
import { errors as JoseErrors, jwtVerify, SignJWT } from "jose"
import type { TokenResponse } from "../../schema/TokenResponse.ts"
import { SecretBox } from "../secrets/SecretBox.ts"

export const JWT_ISSUER = "urn:vendor:vdb"
export const JWT_LIFETIME_SECONDS = 15 * 60
const SUBJECT_PREFIX = "urn:uuid:"

export class JwtInvalid extends Schema.TaggedError<JwtInvalid>()("JwtInvalid", {
  reason: Schema.Literals(["expired", "invalid"])
}) {
  override get message() {
    return this.reason === "expired" ? "token expired" : "invalid token"
  }
}

/**
 * Short-lived bearer tokens: HS512 under a key derived from the master key
 * (so it survives restarts and is shared by every API process), 15 minutes,
 * issuer `urn:vendor:vdb`, subject `urn:uuid:<org>`. Time comes from `Clock`.
 */
export class Jwt extends Context.Service<Jwt, {
  issue(orgUuid: string): Effect.Effect<TokenResponse>
  /** The organization UUID of a valid token. */
  verify(token: string): Effect.Effect<string, JwtInvalid>
}>()("vdb/auth/Jwt") {
  static readonly layer = Layer.effect(Jwt, Effect.gen(function*() {
    const box = yield* SecretBox
    const key = Redacted.value(box.derive("jwt-signing"))

    const issue = Effect.fn("Jwt.issue")(function*(orgUuid: string) {
      const iat = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      const exp = iat + JWT_LIFETIME_SECONDS
      const sub = SUBJECT_PREFIX + orgUuid
      const token = yield* Effect.promise(() =>
        new SignJWT({})
          .setProtectedHeader({ alg: "HS512", typ: "JWT" })
          .setIssuer(JWT_ISSUER)
          .setSubject(sub)
          .setIssuedAt(iat)
          .setExpirationTime(exp)
          .sign(key)
      )
      return { token, iss: JWT_ISSUER, sub, exp }
    })

    const verify = Effect.fnUntraced(function*(token: string) {
      const now = yield* Clock.currentTimeMillis
      const payload = yield* Effect.tryPromise({
        try: () =>
          jwtVerify(token, key, {
            algorithms: ["HS512"],
            issuer: JWT_ISSUER,
            currentDate: new Date(now),
            requiredClaims: ["exp", "sub", "iat"]
          }),
        catch: (e) => new JwtInvalid({ reason: e instanceof JoseErrors.JWTExpired ? "expired" : "invalid" })
      })
      const sub = payload.payload.sub ?? ""
      if (!sub.startsWith(SUBJECT_PREFIX)) return yield* new JwtInvalid({ reason: "invalid" })
      return sub.slice(SUBJECT_PREFIX.length)
    })

    return Jwt.of({ issue, verify })
  }))
}
