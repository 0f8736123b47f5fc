import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { randomUUID } from "node:crypto"
import { Members } from "../../src/members/Members.ts"
import { SESSION_LIFETIME_MILLIS, Sessions } from "../../src/members/Sessions.ts"
import { ACCOUNT_FAILURES, ADDRESS_FAILURES, MAX_WINDOWS, SignInThrottle } from "../../src/members/SignInThrottle.ts"
import { SqlBackends } from "../support/database.ts"

const backends = [
  ...SqlBackends.map(({ layer: database, name }) => ({
    name,
    layer: Sessions.layer.pipe(Layer.provideMerge(Members.layer), Layer.provideMerge(database))
  })),
  { name: "memory", layer: Sessions.layerMemory.pipe(Layer.provideMerge(Members.layerMemory)) }
]

const START = Date.UTC(2026, 0, 5, 12, 0, 0)
const timed = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  Effect.andThen(TestClock.setTime(START), body).pipe(Effect.provide(TestClock.layer()))

const unique = () => `m-${randomUUID().slice(0, 8)}@example.test`

describe.each(backends)("Members and Sessions ($name)", ({ layer: backend, name }) => {
  layer(backend, { excludeTestServices: true })((it) => {
    it.effect("verifies the password (scrypt), case-insensitive email; refuses wrong passwords and unknown emails", () =>
      Effect.gen(function*() {
        const members = yield* Members
        const email = unique()
        const org = randomUUID()
        const created = yield* members.create({ orgUuid: org, email: email.toUpperCase(), password: "correct horse" })
        assert.strictEqual(created.email, email)
        assert.strictEqual(created.orgUuid, org)
        assert.strictEqual((yield* members.verify(email.toUpperCase(), "correct horse"))?.uuid, created.uuid)
        assert.isUndefined(yield* members.verify(email, "wrong horse"))
        assert.isUndefined(yield* members.verify(unique(), "correct horse"))
        const again = yield* Effect.flip(members.create({ orgUuid: org, email, password: "another one" }))
        assert.strictEqual(again.reason._tag, "MemberExists")
        const short = yield* Effect.flip(members.create({ orgUuid: org, email: unique(), password: "short" }))
        assert.strictEqual(short.reason._tag, "MemberInvalid")
        if (name !== "memory") {
          const sql = Option.getOrThrow(yield* Effect.serviceOption(SqlClient.SqlClient))
          const rows = yield* sql<
            { password_hash: string }
          >`SELECT password_hash FROM members WHERE uuid = ${created.uuid}::uuid`
          assert.match(rows[0]!.password_hash, /^scrypt\$15\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/)
          assert.notInclude(rows[0]!.password_hash, "correct horse")
        }
      }))

    it.effect("two removals of one member at once: one removes it, the other is not found", () =>
      Effect.gen(function*() {
        const members = yield* Members
        for (let trial = 0; trial < 10; trial++) {
          const member = yield* members.create({ orgUuid: randomUUID(), email: unique(), password: "correct horse" })
          const removals = yield* Effect.all([0, 1].map(() => Effect.exit(members.remove(member.uuid))), {
            concurrency: "unbounded"
          })
          assert.deepStrictEqual(removals.map((exit) => exit._tag).sort(), ["Failure", "Success"])
        }
      }))

    it.effect("sessions last 12 hours, end on sign-out and when the member is removed", () =>
      timed(Effect.gen(function*() {
        const members = yield* Members
        const sessions = yield* Sessions
        const member = yield* members.create({ orgUuid: randomUUID(), email: unique(), password: "correct horse" })
        const opened = yield* sessions.open(member)
        assert.isDefined(opened)
        const token = Redacted.value(opened!.token)
        assert.strictEqual(opened!.expiresAt, START + SESSION_LIFETIME_MILLIS)
        assert.strictEqual((yield* sessions.resolve(token))?.uuid, member.uuid)
        yield* TestClock.adjust(SESSION_LIFETIME_MILLIS - 1000)
        assert.strictEqual((yield* sessions.resolve(token))?.uuid, member.uuid)
        yield* TestClock.adjust("1 second")
        assert.isUndefined(yield* sessions.resolve(token))

        const second = Redacted.value((yield* sessions.open(member))!.token)
        yield* sessions.close(second)
        assert.isUndefined(yield* sessions.resolve(second))

        const third = Redacted.value((yield* sessions.open(member))!.token)
        yield* members.remove(member.uuid)
        assert.isUndefined(yield* sessions.resolve(third))
        assert.isUndefined(yield* sessions.resolve("not-a-session"))
      })))
  })
})

describe("SignInThrottle", () => {
  layer(SignInThrottle.layerMemory, { excludeTestServices: true })((it) => {
    it.effect("locks an account after 5 wrong passwords for 15 minutes; a success clears it", () =>
      timed(Effect.gen(function*() {
        const throttle = yield* SignInThrottle
        for (let i = 0; i < ACCOUNT_FAILURES; i++) {
          assert.isUndefined(yield* throttle.check("a@x.test", `10.0.0.${i}`))
          yield* throttle.failed("a@x.test", `10.0.0.${i}`)
        }
        const wait = yield* throttle.check("A@x.test", "10.9.9.9")
        assert.strictEqual(wait, 15 * 60)
        yield* TestClock.adjust("15 minutes")
        assert.isUndefined(yield* throttle.check("a@x.test", "10.9.9.9"))
        yield* throttle.failed("b@x.test", "10.1.1.1")
        yield* throttle.succeeded("b@x.test")
        assert.isUndefined(yield* throttle.check("b@x.test", "10.1.1.2"))
      })))

    it.effect("a check keeps nothing; long emails share one window; the windows held stay bounded", () =>
      timed(Effect.gen(function*() {
        const throttle = yield* SignInThrottle
        yield* TestClock.adjust("1 hour")
        const before = yield* throttle.size
        for (let i = 0; i < 1000; i++) {
          assert.isUndefined(yield* throttle.check(`${i}-${"x".repeat(1000)}@z.test`, `198.51.100.${i % 250}`))
        }
        assert.strictEqual(yield* throttle.size, before)
        // No member's email is longer than 320 characters: longer ones are throttled by their start.
        const long = "y".repeat(400)
        for (let i = 0; i < ACCOUNT_FAILURES; i++) yield* throttle.failed(`${long}${i}@z.test`, `203.0.113.${i}`)
        assert.isDefined(yield* throttle.check(`${long}other@z.test`, "203.0.113.200"))
        for (let i = 0; i < MAX_WINDOWS; i++) yield* throttle.failed(`many${i}@z.test`, `addr-${i}`)
        assert.isAtMost(yield* throttle.size, MAX_WINDOWS)
        // The newest windows are the ones kept.
        for (let i = 0; i < ACCOUNT_FAILURES; i++) yield* throttle.failed("last@z.test", "addr-last")
        assert.isDefined(yield* throttle.check("last@z.test", "addr-other"))
      })))

    it.effect("locks an address after 20 wrong passwords across accounts", () =>
      timed(Effect.gen(function*() {
        const throttle = yield* SignInThrottle
        for (let i = 0; i < ADDRESS_FAILURES; i++) yield* throttle.failed(`user${i}@y.test`, "192.0.2.7")
        assert.isDefined(yield* throttle.check("fresh@y.test", "192.0.2.7"))
        assert.isUndefined(yield* throttle.check("fresh@y.test", "192.0.2.8"))
      })))
  })
})
