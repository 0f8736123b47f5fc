import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Organizations } from "../../../src/orgs/Organizations.ts"
import { VulnStore } from "../../../src/vulns/VulnStore.ts"
import { PostgresTest } from "../../support/database.ts"
import { SecretBoxTest } from "../../support/secrets.ts"
import { serveWithOrg } from "../harness.ts"
import { get } from "./http.ts"
import { forgeToken } from "./tokens.ts"

const Deps = Layer.mergeAll(Organizations.layer, VulnStore.layer).pipe(
  Layer.provideMerge(Layer.mergeAll(PostgresTest, SecretBoxTest))
)

/** Verified tokens are remembered until their `exp`; what is remembered never outlives that or the organization. */
layer(Deps, { excludeTestServices: true, timeout: 60_000 })((it) => {
  describe("Bearer tokens", () => {
    it.effect("a remembered token stops working at its exp (403) and when its organization is deactivated", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, orgs, org } = yield* serveWithOrg("jwt", { perMinute: 0, perWeek: 0 })
        const forge = (exp: number) => forgeToken(org, exp)
        const url = `${base}/info/CVE-2033-0001`
        // Expires at the next whole second (at least one later): accepted now, twice (the second from memory).
        const shortLived = `Bearer ${yield* forge(Math.floor(Date.now() / 1000) + 2)}`
        assert.strictEqual((yield* get(url, { authorization: shortLived })).status, 404)
        assert.strictEqual((yield* get(url, { authorization: shortLived })).status, 404)
        yield* Effect.sleep("2100 millis")
        const expired = yield* get(url, { authorization: shortLived })
        assert.strictEqual(expired.status, 403)
        assert.strictEqual(JSON.parse(expired.body.toString()).error, "token expired")

        const token = `Bearer ${yield* forge(Math.floor(Date.now() / 1000) + 900)}`
        assert.strictEqual((yield* get(url, { authorization: token })).status, 404)
        yield* orgs.setActive(org.uuid, false)
        assert.strictEqual((yield* get(url, { authorization: token })).status, 403)
        yield* orgs.setActive(org.uuid, true)
        assert.strictEqual((yield* get(url, { authorization: token })).status, 404)
        // A token that differs in one signature character was never verified: 401.
        const tampered = token.slice(0, -2) + (token.at(-2) === "A" ? "B" : "A") + token.at(-1)
        assert.strictEqual((yield* get(url, { authorization: tampered })).status, 401)
      })))
  })
})
