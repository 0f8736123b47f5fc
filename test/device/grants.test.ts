import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { randomUUID } from "node:crypto"
import { deviceCodeHash } from "../../src/device/DeviceGrant.ts"
import { DeviceGrants } from "../../src/device/DeviceGrants.ts"
import { normalizeUserCode, USER_CODE_ALPHABET } from "../../src/device/UserCode.ts"
import { SqlBackends } from "../support/database.ts"

/**
 * The grant's state table (spec 3) on every backend, with time from TestClock:
 * pending → (slow_down) → approved → redeemed once; denied; expired.
 */
const timing = { lifetimeSeconds: 900, intervalSeconds: 5 }
const START = Date.UTC(2026, 0, 5, 12, 0, 0)

const backends = [
  ...SqlBackends.map(({ layer: database, name }) => ({
    name,
    layer: DeviceGrants.layerWith(timing).pipe(Layer.provideMerge(database))
  })),
  { name: "memory", layer: DeviceGrants.layerMemoryWith(timing) }
]

const client = { name: "vdb-cli", version: "0.1.0", address: "127.0.0.1" }

/** Runs a test body on a TestClock set to START. */
const timed = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  Effect.andThen(TestClock.setTime(START), body).pipe(Effect.provide(TestClock.layer()))

describe.each(backends)("DeviceGrants ($name)", ({ layer: backend, name }) => {
  layer(backend, { excludeTestServices: true })((it) => {
    it.effect("authorize: a 256-bit device code of >= 40 characters and an XXX-XXX user code", () =>
      timed(Effect.gen(function*() {
        const grants = yield* DeviceGrants
        const issued = yield* grants.authorize(client)
        const deviceCode = Redacted.value(issued.deviceCode)
        assert.isAtLeast(deviceCode.length, 40)
        assert.strictEqual(Buffer.from(deviceCode, "base64url").length, 32)
        assert.match(issued.userCode, new RegExp(`^[${USER_CODE_ALPHABET}]{3}-[${USER_CODE_ALPHABET}]{3}$`))
        assert.deepStrictEqual([issued.expiresIn, issued.interval], [900, 5])
      })))

    it.effect("pending: authorization_pending, then slow_down when polled within the interval", () =>
      timed(Effect.gen(function*() {
        const grants = yield* DeviceGrants
        const code = Redacted.value((yield* grants.authorize(client)).deviceCode)
        assert.strictEqual((yield* grants.poll(code))._tag, "authorization_pending")
        yield* TestClock.adjust("2 seconds")
        assert.strictEqual((yield* grants.poll(code))._tag, "slow_down")
        yield* TestClock.adjust("10 seconds")
        assert.strictEqual((yield* grants.poll(code))._tag, "authorization_pending")
      })))

    it.effect("slow_down raises the interval by 5 s on the server: the old interval is slow_down again (RFC 8628 §3.5)", () =>
      timed(Effect.gen(function*() {
        const grants = yield* DeviceGrants
        const code = Redacted.value((yield* grants.authorize(client)).deviceCode)
        const pollAfter = (millis: number) => Effect.andThen(TestClock.adjust(millis), grants.poll(code))
        const tags = [
          (yield* grants.poll(code))._tag,
          (yield* pollAfter(1_000))._tag, // interval 5 s: too soon, now 10 s
          (yield* pollAfter(5_200))._tag, // 5.2 s after the slow_down: too soon for 10 s, now 15 s
          (yield* pollAfter(14_600))._tag, // within the 0.5 s slack of 15 s
          (yield* pollAfter(15_000))._tag, // 15 s stays: still the raised interval
          (yield* pollAfter(14_000))._tag // too soon again: 20 s
        ]
        assert.deepStrictEqual(tags, [
          "authorization_pending",
          "slow_down",
          "slow_down",
          "authorization_pending",
          "authorization_pending",
          "slow_down"
        ])
      })))

    it.effect("approved: the first poll redeems, every replay is access_denied", () =>
      timed(Effect.gen(function*() {
        const grants = yield* DeviceGrants
        const issued = yield* grants.authorize(client)
        const code = Redacted.value(issued.deviceCode)
        const member = randomUUID()
        // Accepted in any case, with or without the hyphen.
        const view = yield* grants.approve(issued.userCode.replace("-", "").toLowerCase(), member)
        assert.strictEqual(view.status, "approved")
        assert.deepStrictEqual(yield* grants.poll(code), { _tag: "issued", memberUuid: member })
        yield* TestClock.adjust("10 seconds")
        assert.strictEqual((yield* grants.poll(code))._tag, "access_denied")
        assert.strictEqual((yield* grants.poll(code))._tag, "access_denied")
      })))

    it.effect("50 concurrent polls after approval yield exactly one credential", () =>
      timed(Effect.gen(function*() {
        const grants = yield* DeviceGrants
        const issued = yield* grants.authorize(client)
        yield* grants.approve(issued.userCode, randomUUID())
        const outcomes = yield* Effect.forEach(
          Array.from({ length: 50 }),
          () => grants.poll(Redacted.value(issued.deviceCode)),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(outcomes.filter((o) => o._tag === "issued").length, 1)
        assert.isTrue(outcomes.every((o) => o._tag === "issued" || o._tag === "access_denied"))
      })))

    it.effect("denied: polls answer access_denied; the code cannot be approved afterwards", () =>
      timed(Effect.gen(function*() {
        const grants = yield* DeviceGrants
        const issued = yield* grants.authorize(client)
        yield* grants.deny(issued.userCode, randomUUID())
        assert.strictEqual((yield* grants.poll(Redacted.value(issued.deviceCode)))._tag, "access_denied")
        const error = yield* Effect.flip(grants.approve(issued.userCode, randomUUID()))
        assert.strictEqual(error.reason._tag, "UsedUserCode")
      })))

    it.effect("expiry: expired_token after expires_in, and approval is refused as expired", () =>
      timed(Effect.gen(function*() {
        const grants = yield* DeviceGrants
        const issued = yield* grants.authorize(client)
        const approvedLate = yield* grants.authorize(client)
        yield* grants.approve(approvedLate.userCode, randomUUID())
        yield* TestClock.adjust("899 seconds")
        assert.strictEqual((yield* grants.poll(Redacted.value(issued.deviceCode)))._tag, "authorization_pending")
        yield* TestClock.adjust("1 second")
        assert.strictEqual((yield* grants.poll(Redacted.value(issued.deviceCode)))._tag, "expired_token")
        // Approved but never redeemed in time: no credential after expiry either.
        assert.strictEqual((yield* grants.poll(Redacted.value(approvedLate.deviceCode)))._tag, "expired_token")
        const error = yield* Effect.flip(grants.approve(issued.userCode, randomUUID()))
        assert.strictEqual(error.reason._tag, "ExpiredUserCode")
      })))

    it.effect("unknown codes: invalid_grant for a device code, UnknownUserCode for a user code", () =>
      timed(Effect.gen(function*() {
        const grants = yield* DeviceGrants
        assert.strictEqual((yield* grants.poll("no-such-device-code"))._tag, "invalid_grant")
        const unknown = yield* Effect.flip(grants.approve("BCD-FGH", randomUUID()))
        assert.strictEqual(unknown.reason._tag, "UnknownUserCode")
        const malformed = yield* Effect.flip(grants.claim("A0I-O1L"))
        assert.strictEqual(malformed.reason._tag, "UnknownUserCode")
      })))

    it.effect("decisionBy: what the member decided, for that member only; a redeemed grant was approved", () =>
      timed(Effect.gen(function*() {
        const grants = yield* DeviceGrants
        const [approver, denier] = [randomUUID(), randomUUID()]
        const approved = yield* grants.authorize(client)
        const denied = yield* grants.authorize(client)
        assert.isUndefined(yield* grants.decisionBy(approved.userCode, approver))
        yield* grants.approve(approved.userCode, approver)
        yield* grants.deny(denied.userCode, denier)
        assert.strictEqual(
          yield* grants.decisionBy(approved.userCode.replace("-", "").toLowerCase(), approver),
          "approved"
        )
        assert.strictEqual(yield* grants.decisionBy(denied.userCode, denier), "denied")
        assert.isUndefined(yield* grants.decisionBy(approved.userCode, denier))
        yield* grants.poll(Redacted.value(approved.deviceCode))
        assert.strictEqual(yield* grants.decisionBy(approved.userCode, approver), "approved")
        assert.isUndefined(yield* grants.decisionBy("not a code", approver))
      })))

    it.effect("approving twice: the second is refused as already used", () =>
      timed(Effect.gen(function*() {
        const grants = yield* DeviceGrants
        const issued = yield* grants.authorize(client)
        yield* grants.approve(issued.userCode, randomUUID())
        const error = yield* Effect.flip(grants.approve(issued.userCode, randomUUID()))
        assert.strictEqual(error.reason._tag, "UsedUserCode")
      })))

    if (name !== "memory") {
      it.effect("the record stores only the SHA-256 of device_code; the member is null until approval", () =>
        timed(Effect.gen(function*() {
          const grants = yield* DeviceGrants
          const sql = Option.getOrThrow(yield* Effect.serviceOption(SqlClient.SqlClient))
          const issued = yield* grants.authorize(client)
          const code = Redacted.value(issued.deviceCode)
          const before = yield* sql<
            Record<string, unknown>
          >`SELECT * FROM device_grants WHERE user_code = ${issued.userCode}`
          assert.strictEqual(before.length, 1)
          assert.strictEqual(before[0]!.device_code_hash, deviceCodeHash(code))
          assert.isNull(before[0]!.member_uuid)
          assert.notInclude(JSON.stringify(before), code)
          // Looking at the approval page claims the grant; the member stays null until a decision.
          yield* grants.claim(issued.userCode)
          const claimed = yield* sql<
            Record<string, unknown>
          >`SELECT member_uuid, claimed_at FROM device_grants WHERE user_code = ${issued.userCode}`
          assert.isNull(claimed[0]!.member_uuid)
          assert.isNotNull(claimed[0]!.claimed_at)
          const member = randomUUID()
          yield* grants.approve(issued.userCode, member)
          const after = yield* sql<
            Record<string, unknown>
          >`SELECT member_uuid::text AS member_uuid, claimed_at, approved_at
            FROM device_grants WHERE user_code = ${issued.userCode}`
          assert.strictEqual(after[0]!.member_uuid, member)
          assert.isNotNull(after[0]!.claimed_at)
          assert.isNotNull(after[0]!.approved_at)
        })))
    }
  })
})

describe("user codes", () => {
  layer(Layer.empty)((it) => {
    it.effect("are read case-insensitively with or without the hyphen", () =>
      Effect.sync(() => {
        assert.strictEqual(normalizeUserCode(" bcd-fgh "), "BCD-FGH")
        assert.strictEqual(normalizeUserCode("bcdfgh"), "BCD-FGH")
        assert.isUndefined(normalizeUserCode("BCD-FG"))
        assert.isUndefined(normalizeUserCode("ABC-DEF")) // vowels are not in the alphabet
      }))
  })
})
