import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Jwt, JwtInvalid } from "../../src/auth/Jwt.ts"
import { VerifiedTokens } from "../../src/auth/VerifiedTokens.ts"

/**
 * `VerifiedTokens` (src/auth/VerifiedTokens.ts) over a Jwt that counts its verifications: a good
 * token is verified once until its expiry, and so is a refused one (the `/vuln` fast path and the
 * HttpApi both ask for a token they cannot accept).
 */
const ORG = "1d2c3b4a-5e6f-4a1b-8c2d-3e4f5a6b7c8d"

const counting = () => {
  const calls: Array<string> = []
  const layer = VerifiedTokens.layer.pipe(Layer.provide(Layer.succeed(
    Jwt,
    Jwt.of({
      issue: () => Effect.die("not used"),
      verify: (token) =>
        Effect.suspend(() => {
          calls.push(token)
          return token === "good"
            ? Effect.succeed({ orgUuid: ORG, secretBinding: "b", exp: 2_000 })
            : Effect.fail(new JwtInvalid({ reason: token === "old" ? "expired" : "invalid" }))
        })
    })
  )))
  return { calls, layer }
}

describe("VerifiedTokens", () => {
  it.effect("verifies each token once: a good one until its expiry, a refused one for good", () => {
    const { calls, layer } = counting()
    return Effect.gen(function*() {
      const tokens = yield* VerifiedTokens
      for (let i = 0; i < 3; i++) {
        assert.strictEqual((yield* tokens.claimsOf("good", 1_000_000)).orgUuid, ORG)
        assert.strictEqual((yield* Effect.flip(tokens.claimsOf("forged", 1_000_000))).reason, "invalid")
        assert.strictEqual((yield* Effect.flip(tokens.claimsOf("old", 1_000_000))).reason, "expired")
      }
      assert.deepStrictEqual(calls, ["good", "forged", "old"])
      // Past its expiry a good token is verified again (which then says expired).
      yield* tokens.claimsOf("good", 2_000_000)
      assert.strictEqual(calls.length, 4)
      // A long refused token is not kept.
      const long = "x".repeat(3000)
      yield* Effect.flip(tokens.claimsOf(long, 1_000_000))
      yield* Effect.flip(tokens.claimsOf(long, 1_000_000))
      assert.strictEqual(calls.filter((t) => t === long).length, 2)
    }).pipe(Effect.provide(layer))
  })
})
