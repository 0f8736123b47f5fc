import { Clock, Context, Effect, Layer, Redacted, Schema } from "effect"
import { errors as JoseErrors, jwtVerify, SignJWT } from "jose"
import { createHmac } from "node:crypto"
import type { TokenResponse } from "../../schema/TokenResponse.ts"
import { SecretBox } from "../secrets/SecretBox.ts"

export const JWT_ISSUER = "urn:vendor:vdb"
export const JWT_LIFETIME_SECONDS = 15 * 60
const SUBJECT_PREFIX = "urn:uuid:"
/** Private claim: the `secretBinding` of the secret the token was signed in with. */
export const SECRET_CLAIM = "sdg"
const BINDING_LABEL = "vdb/jwt/secret-binding"

export class JwtInvalid extends Schema.TaggedError<JwtInvalid>()("JwtInvalid", {
  reason: Schema.Literals(["expired", "invalid"])
}) {
  override get message() {
    return this.reason === "expired" ? "token expired" : "invalid token"
  }
}

/** What a token that verified says: whose it is, which secret signed it in, until when. */
export interface TokenClaims {
  readonly orgUuid: string
  readonly secretBinding: string
  /** Epoch seconds. */
  readonly exp: number
}

// Organizations hands out the same Redacted while its entry is cached (a rotated secret is a new
// object), so a repeated check is a map lookup.
const bindings = new WeakMap<Redacted.Redacted<string>, string>()

/**
 * A short digest of an organization's secret that its tokens carry, so rotating the secret
 * revokes every token signed in with the old one (checked against the organization's current
 * secret on every request). An HMAC under the secret of a fixed label, 128 bits: it tells
 * nothing about the secret, and unlike the ApiKey digest (an HMAC of the UUID) it is no part of a
 * credential, so a token's readable payload never carries one.
 */
export const secretBinding = (secret: Redacted.Redacted<string>): string => {
  let binding = bindings.get(secret)
  if (binding === undefined) {
    binding = createHmac("sha256", Redacted.value(secret)).update(BINDING_LABEL).digest().subarray(0, 16).toString(
      "base64url"
    )
    bindings.set(secret, binding)
  }
  return binding
}

/** Whether a verified token was signed in with this (the organization's current) secret. */
export const signedInWith = (claims: TokenClaims, secret: Redacted.Redacted<string>) =>
  claims.secretBinding === secretBinding(secret)

/**
 * base64url has unused low bits in a last character that carries 2 or 4 bits of data, so a
 * lenient decoder (jose's, Node's) takes several spellings of one HS512 signature. Only the
 * canonical one is ours: one token, one string (`VerifiedTokens` keys on the string).
 */
const canonicalSignature = (token: string) => {
  const signature = token.slice(token.lastIndexOf(".") + 1)
  return Buffer.from(signature, "base64url").toString("base64url") === signature
}

const invalid = () => new JwtInvalid({ reason: "invalid" })

/**
 * Short-lived bearer tokens: HS512 under a key derived from the master key
 * (so it survives restarts and is shared by every API process), 15 minutes,
 * issuer `urn:vendor:vdb`, subject `urn:uuid:<org>`, and the `secretBinding`
 * of the secret that signed in. Time comes from `Clock`.
 */
export class Jwt extends Context.Service<Jwt, {
  issue(orgUuid: string, secretBinding: string): Effect.Effect<TokenResponse>
  /** The claims of a valid token; whether its secret is still the organization's is the caller's check (`signedInWith`). */
  verify(token: string): Effect.Effect<TokenClaims, JwtInvalid>
}>()("vdb/auth/Jwt") {
  static readonly layer = Layer.effect(
    Jwt,
    Effect.gen(function*() {
      const box = yield* SecretBox
      const key = Redacted.value(box.derive("jwt-signing"))

      const issue = Effect.fn("Jwt.issue")(function*(orgUuid: string, binding: string) {
        const iat = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        const exp = iat + JWT_LIFETIME_SECONDS
        const sub = SUBJECT_PREFIX + orgUuid
        const token = yield* Effect.promise(() =>
          new SignJWT({ [SECRET_CLAIM]: binding })
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
        if (!canonicalSignature(token)) return yield* invalid()
        const now = yield* Clock.currentTimeMillis
        const { payload } = yield* Effect.tryPromise({
          try: () =>
            jwtVerify(token, key, {
              algorithms: ["HS512"],
              issuer: JWT_ISSUER,
              currentDate: new Date(now),
              requiredClaims: ["exp", "sub", "iat"]
            }),
          catch: (e) => new JwtInvalid({ reason: e instanceof JoseErrors.JWTExpired ? "expired" : "invalid" })
        })
        // Checked after jose, so an expired token of ours is "expired" whatever it carries. A token
        // without the binding (issued before tokens carried one) is refused: nothing ties it to a secret.
        const sub = payload.sub ?? ""
        const binding = payload[SECRET_CLAIM]
        if (!sub.startsWith(SUBJECT_PREFIX) || typeof binding !== "string" || typeof payload.exp !== "number") {
          return yield* invalid()
        }
        return {
          orgUuid: sub.slice(SUBJECT_PREFIX.length),
          secretBinding: binding,
          exp: payload.exp
        } satisfies TokenClaims
      })

      return Jwt.of({ issue, verify })
    })
  )
}
