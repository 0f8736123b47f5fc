import { Effect, Redacted } from "effect"
import { SignJWT } from "jose"
import { SECRET_CLAIM, secretBinding } from "../../../src/auth/Jwt.ts"
import { SecretBox } from "../../../src/secrets/SecretBox.ts"

/**
 * A Bearer token as `GET /v1/auth/token` issues it (HS512 with the master key's `jwt-signing` key,
 * bound to the organization's current secret), expiring at `exp` (epoch seconds).
 */
export const forgeToken = (org: { readonly uuid: string; readonly secret: string }, exp: number) =>
  Effect.gen(function*() {
    const key = Redacted.value((yield* SecretBox).derive("jwt-signing"))
    return yield* Effect.promise(() =>
      new SignJWT({ [SECRET_CLAIM]: secretBinding(Redacted.make(org.secret)) }).setProtectedHeader({ alg: "HS512" })
        .setIssuer("urn:vendor:vdb").setSubject(`urn:uuid:${org.uuid}`)
        .setIssuedAt(Math.floor(Date.now() / 1000)).setExpirationTime(exp).sign(key)
    )
  })
