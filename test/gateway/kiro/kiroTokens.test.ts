import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Layer, Metric, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { afterAll, afterEach, beforeAll } from "vitest"
import { Invalidation } from "../../../src/db/Invalidation.ts"
import { UpstreamClient } from "../../../src/http/UpstreamClient.ts"
import { KiroTokens } from "../../../src/providers/kiro/KiroTokens.ts"
import { ProviderKeys } from "../../../src/vault/ProviderKeys.ts"
import { SecretBoxTest } from "../../support/secrets.ts"
import { type FakeKiro, startFakeKiro } from "./FakeKiro.ts"

const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"

/** `vdb_gateway_kiro_refreshes_total` for one outcome, as /metrics reports it. */
const refreshesCounted = (outcome: string) =>
  Effect.map(Metric.snapshot, (all) => {
    const found = all.find((m) => m.id === "vdb_gateway_kiro_refreshes_total" && m.attributes?.outcome === outcome)
    return found === undefined ? 0 : Number((found.state as { count: number }).count)
  })
const REFRESH_TOKEN = "aorAAAAAGkiroRefreshTokenForTests0000"
const social = JSON.stringify({
  refreshToken: REFRESH_TOKEN,
  authMethod: "social",
  profileArn: "arn:aws:codewhisperer:us-east-1:1:profile/P"
})

let kiro: FakeKiro
beforeAll(async () => {
  kiro = await startFakeKiro()
})
afterEach(() => kiro.reset())
afterAll(() => kiro.close())

/** A fresh vault and token cache per test, refreshing at the fake's sign-in services. */
const tokens = () =>
  Layer.effect(KiroTokens)(KiroTokens.makeWith({
    social: new URL(`${kiro.url}/refreshToken`),
    idc: new URL(`${kiro.url}/token`)
  })).pipe(
    Layer.provideMerge(ProviderKeys.layerMemory),
    Layer.provide(Invalidation.layerMemory),
    Layer.provide(SecretBoxTest),
    Layer.provide(UpstreamClient.layerWith({ timeout: "10 seconds" }))
  )

const withSignIn = (signIn: string) =>
  Effect.flatMap(ProviderKeys, (vault) => vault.set(ORG, "kiro", Redacted.make(signIn)))

const accessToken = Effect.flatMap(KiroTokens, (t) => t.access(ORG)).pipe(Effect.map((a) => Redacted.value(a.token)))

describe("KiroTokens", () => {
  it.effect("mints once, reuses the token, and refreshes 60 s before it expires", () =>
    Effect.gen(function*() {
      yield* withSignIn(social)
      assert.strictEqual(yield* accessToken, "access-token-1")
      assert.deepStrictEqual(JSON.parse(kiro.refreshes[0]!.body.toString()), { refreshToken: REFRESH_TOKEN })
      assert.strictEqual(kiro.refreshes[0]!.url, "/refreshToken")
      yield* TestClock.adjust("3539 seconds")
      assert.strictEqual(yield* accessToken, "access-token-1")
      assert.strictEqual(kiro.refreshes.length, 1)
      yield* TestClock.adjust("2 seconds") // 59 s before expiry
      assert.strictEqual(yield* accessToken, "access-token-2")
      assert.strictEqual(kiro.refreshes.length, 2)
    }).pipe(Effect.provide(tokens())))

  it.effect("20 concurrent first uses make exactly one refresh call", () =>
    Effect.gen(function*() {
      yield* withSignIn(social)
      const counted = yield* refreshesCounted("ok")
      const open = kiro.hold()
      const all = yield* Effect.forkChild(
        Effect.all(Array.from({ length: 20 }, () => accessToken), { concurrency: "unbounded" })
      )
      // Every caller is waiting once the one refresh call has arrived; then it may answer.
      while (kiro.refreshes.length === 0) yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
      open()
      const minted = yield* Fiber.join(all)
      assert.deepStrictEqual(new Set(minted), new Set(["access-token-1"]))
      assert.strictEqual(kiro.refreshes.length, 1)
      assert.strictEqual((yield* refreshesCounted("ok")) - counted, 1)
    }).pipe(Effect.provide(tokens())))

  it.effect("stores a rotated refresh token in the vault and refreshes with it next time", () =>
    Effect.gen(function*() {
      yield* withSignIn(social)
      kiro.auth = (n) => ({
        status: 200,
        body: { accessToken: `access-token-${n}`, expiresIn: 3600, refreshToken: `rotated-${n}`, profileArn: "arn:new" }
      })
      yield* accessToken
      const stored = JSON.parse(Redacted.value(yield* Effect.flatMap(ProviderKeys, (v) => v.get(ORG, "kiro"))))
      // With the token and its expiry, so another process sharing the vault uses it rather than refreshing.
      assert.deepStrictEqual(stored, {
        refreshToken: "rotated-1",
        authMethod: "social",
        profileArn: "arn:new",
        accessToken: "access-token-1",
        expiresAt: new Date((yield* Clock.currentTimeMillis) + 3600_000).toISOString()
      })
      yield* TestClock.adjust("1 hour")
      assert.strictEqual(yield* accessToken, "access-token-2")
      assert.deepStrictEqual(JSON.parse(kiro.refreshes[1]!.body.toString()), { refreshToken: "rotated-1" })
      const again = JSON.parse(Redacted.value(yield* Effect.flatMap(ProviderKeys, (v) => v.get(ORG, "kiro"))))
      assert.strictEqual(again.refreshToken, "rotated-2")
    }).pipe(Effect.provide(tokens())))

  it.effect("an answer's expiresIn past a year is taken as a year: the token is used and a rotated refresh token kept", () =>
    Effect.gen(function*() {
      yield* withSignIn(social)
      // Before: no date could be made of it, the request failed with a defect and the rotated token was lost.
      kiro.auth = (n) => ({
        status: 200,
        body: { accessToken: `access-token-${n}`, expiresIn: 1e13, refreshToken: `rotated-${n}` }
      })
      assert.strictEqual(yield* accessToken, "access-token-1")
      const stored = JSON.parse(Redacted.value(yield* Effect.flatMap(ProviderKeys, (v) => v.get(ORG, "kiro"))))
      assert.strictEqual(stored.refreshToken, "rotated-1")
      assert.strictEqual(
        stored.expiresAt,
        new Date((yield* Clock.currentTimeMillis) + 365 * 24 * 3600_000).toISOString()
      )
    }).pipe(Effect.provide(tokens())))

  it.effect("an answer whose accessToken could not be sent as a header is malformed", () =>
    Effect.gen(function*() {
      yield* withSignIn(social)
      kiro.auth = () => ({ status: 200, body: { accessToken: "at-user\r\nx: 1", expiresIn: 3600 } })
      assert.strictEqual(((yield* Effect.flip(accessToken)) as any).reason, "malformed")
    }).pipe(Effect.provide(tokens())))

  it.effect("a refused refresh is UpstreamAuthFailed, shared by concurrent callers, without the provider's answer", () =>
    Effect.gen(function*() {
      yield* withSignIn(social)
      kiro.auth = () => ({ status: 401, body: { message: `invalid refresh token ${REFRESH_TOKEN}` } })
      const failed = yield* refreshesCounted("failed")
      const failures = yield* Effect.all(Array.from({ length: 5 }, () => Effect.flip(accessToken)), {
        concurrency: "unbounded"
      })
      for (const failure of failures) {
        assert.strictEqual(failure._tag, "UpstreamAuthFailed")
        assert.strictEqual((failure as any).code, "upstream_auth_failed")
        assert.notInclude(failure.message, REFRESH_TOKEN)
        assert.notInclude(JSON.stringify(failure), REFRESH_TOKEN)
      }
      assert.strictEqual(kiro.refreshes.length, 1)
      assert.strictEqual((yield* refreshesCounted("failed")) - failed, 1)
      kiro.auth = () => ({ status: 200, body: { expiresIn: 3600 } })
      assert.strictEqual(((yield* Effect.flip(accessToken)) as any).reason, "malformed")
    }).pipe(Effect.provide(tokens())))

  it.effect("idc sign-ins refresh through SSO OIDC CreateToken with the client's id and secret", () =>
    Effect.gen(function*() {
      yield* withSignIn(
        JSON.stringify({
          refreshToken: "idc-refresh",
          authMethod: "idc",
          clientId: "cid",
          clientSecret: "csecret",
          region: "eu-west-1"
        })
      )
      assert.strictEqual(yield* accessToken, "access-token-1")
      assert.strictEqual(kiro.refreshes[0]!.url, "/token")
      assert.deepStrictEqual(JSON.parse(kiro.refreshes[0]!.body.toString()), {
        clientId: "cid",
        clientSecret: "csecret",
        grantType: "refresh_token",
        refreshToken: "idc-refresh"
      })
    }).pipe(Effect.provide(tokens())))

  it.effect("a new sign-in in the vault is used at once; a stored value that is no sign-in is refused", () =>
    Effect.gen(function*() {
      yield* withSignIn(social)
      yield* accessToken
      yield* withSignIn(JSON.stringify({ refreshToken: "another-one", authMethod: "social" }))
      assert.strictEqual(yield* accessToken, "access-token-2")
      assert.deepStrictEqual(JSON.parse(kiro.refreshes[1]!.body.toString()), { refreshToken: "another-one" })
      yield* withSignIn("sk-not-a-sign-in")
      const failure = yield* Effect.flip(accessToken)
      assert.strictEqual(failure._tag, "ProviderCredentialInvalid")
      assert.strictEqual(kiro.refreshes.length, 2)
    }).pipe(Effect.provide(tokens())))

  it.effect("a token the provider refused early is minted again", () =>
    Effect.gen(function*() {
      yield* withSignIn(social)
      const t = yield* KiroTokens
      const first = yield* t.access(ORG)
      yield* t.invalidate(ORG, first.token)
      assert.strictEqual(yield* accessToken, "access-token-2")
      assert.strictEqual(yield* accessToken, "access-token-2")
    }).pipe(Effect.provide(tokens())))
})
