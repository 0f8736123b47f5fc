import { Effect, Redacted } from "effect"
import { SignJWT } from "jose"
import { SecretBox } from "../../../src/secrets/SecretBox.ts"

/** A Bearer token as `GET /v1/auth/token` issues it (HS512 with the master key's `jwt-signing` key), expiring at `exp` (epoch seconds). */
export const forgeToken = (orgUuid: string, exp: number) =>
  Effect.gen(function*() {
    const key = Redacted.value((yield* SecretBox).derive("jwt-signing"))
    return yield* Effect.promise(() =>
      new SignJWT({}).setProtectedHeader({ alg: "HS512" }).setIssuer("urn:vendor:vdb").setSubject(`urn:uuid:${orgUuid}`)
        .setIssuedAt(Math.floor(Date.now() / 1000)).setExpirationTime(exp).sign(key)
    )
  })
