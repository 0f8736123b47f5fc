import { assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { Members } from "../../src/members/Members.ts"
import { Sessions } from "../../src/members/Sessions.ts"
import { SignInThrottle } from "../../src/members/SignInThrottle.ts"
import { makeSignIn } from "../../src/site/SignIn.ts"
import { SqlBackends } from "../support/database.ts"

/**
 * A sign-in racing `member remove` of the same member: the password is checked, the member is
 * removed, then the session is opened. The attack got an empty 500 (the session insert broke
 * member_sessions' foreign key, a defect); the answer must be the one an unknown member gets.
 */
const backends = [
  ...SqlBackends.map(({ layer: database, name }) => ({
    name,
    layer: Sessions.layer.pipe(Layer.provideMerge(Members.layer), Layer.provideMerge(database))
  })),
  { name: "memory", layer: Sessions.layerMemory.pipe(Layer.provideMerge(Members.layerMemory)) }
]

const PASSWORD = "correct horse battery"
const unique = () => `race-${randomUUID().slice(0, 8)}@example.test`

/** Members whose `verify` removes the member right after accepting the password: the race's interleaving, every time. */
const removedAfterVerify = Layer.effect(
  Members,
  Effect.gen(function*() {
    const members = yield* Members
    return Members.of({
      ...members,
      verify: (email, password) =>
        Effect.tap(
          members.verify(email, password),
          (member) => member === undefined ? Effect.void : Effect.asVoid(Effect.orDie(members.remove(member.uuid)))
        )
    })
  })
)

describe.each(backends)("sign-in racing member removal ($name)", ({ layer: backend, name }) => {
  layer(backend, { excludeTestServices: true })((it) => {
    it.effect("a session for a member removed after the password check is not opened (no defect)", () =>
      Effect.gen(function*() {
        const members = yield* Members
        const sessions = yield* Sessions
        const email = unique()
        yield* members.create({ orgUuid: randomUUID(), email, password: PASSWORD })
        const verified = yield* members.verify(email, PASSWORD)
        assert.isDefined(verified)
        yield* members.remove(verified!.uuid)
        const exit = yield* Effect.exit(sessions.open(verified!))
        assert.isTrue(Exit.isSuccess(exit), `open must not fail: ${String(exit)}`)
        assert.isUndefined(Exit.isSuccess(exit) ? exit.value : "failed")
        if (name !== "memory") {
          const sql = Option.getOrThrow(yield* Effect.serviceOption(SqlClient.SqlClient))
          const rows = yield* sql`SELECT 1 FROM member_sessions WHERE member_uuid = ${verified!.uuid}::uuid`
          assert.strictEqual(rows.length, 0)
        }
        // A member still there gets a session as before.
        const kept = yield* members.create({ orgUuid: randomUUID(), email: unique(), password: PASSWORD })
        const opened = yield* sessions.open(kept)
        assert.isDefined(opened)
        assert.strictEqual((yield* sessions.resolve(Redacted.value(opened!.token)))?.uuid, kept.uuid)
      }))

    it.effect("the sign-in is answered as for an unknown member: wrongCredentials, counted by the throttle", () =>
      Effect.gen(function*() {
        const members = yield* Members
        const email = unique()
        yield* members.create({ orgUuid: randomUUID(), email, password: PASSWORD })
        const throttle = yield* SignInThrottle
        const signIn = yield* makeSignIn.pipe(Effect.provide(removedAfterVerify))

        const before = yield* throttle.size
        const unknown = yield* signIn(unique(), PASSWORD, "198.51.100.1")
        const afterUnknown = yield* throttle.size
        const raced = yield* Effect.exit(signIn(email, PASSWORD, "198.51.100.2"))
        assert.isTrue(Exit.isSuccess(raced), `sign-in must not fail: ${String(raced)}`)
        assert.deepStrictEqual(Exit.isSuccess(raced) ? raced.value : undefined, unknown)
        assert.deepStrictEqual(unknown, { _tag: "wrongCredentials" })
        // The same failure windows (account and address) as the unknown member's.
        assert.strictEqual((yield* throttle.size) - afterUnknown, afterUnknown - before)
        assert.isUndefined(yield* members.verify(email, PASSWORD))
      }).pipe(Effect.provide(SignInThrottle.layerMemory)))

    it.effect("concurrent sessions opened while the member is removed: each opened or refused, none a defect", () =>
      Effect.gen(function*() {
        const members = yield* Members
        const sessions = yield* Sessions
        for (let round = 0; round < 5; round++) {
          const member = yield* members.create({ orgUuid: randomUUID(), email: unique(), password: PASSWORD })
          const [opens, removed] = yield* Effect.all([
            Effect.all(Array.from({ length: 12 }, () => Effect.exit(sessions.open(member))), {
              concurrency: "unbounded"
            }),
            Effect.exit(members.remove(member.uuid))
          ], { concurrency: "unbounded" })
          assert.isTrue(Exit.isSuccess(removed), `removal: ${String(removed)}`)
          for (const exit of opens) {
            assert.isTrue(Exit.isSuccess(exit), `no defect: ${String(exit)}`)
            // Opened before the removal or refused after it; either way no session outlives the member.
            const opened = Exit.isSuccess(exit) ? exit.value : undefined
            if (opened) assert.isUndefined(yield* sessions.resolve(Redacted.value(opened.token)))
          }
        }
      }))
  })
})
