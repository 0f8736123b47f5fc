import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { randomUUID } from "node:crypto"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { SqlBackends } from "../support/database.ts"
import { SecretBoxTest } from "../support/secrets.ts"

// `secretOf` is authentication's hot path: concurrent reads share statements
// and opened secrets are reused for an unchanged row. Neither may hide a change.
describe.each(SqlBackends)("Organizations.secretOf ($name)", ({ layer: sql }) => {
  layer(Organizations.layer.pipe(Layer.provideMerge(Layer.merge(sql, SecretBoxTest))), { excludeTestServices: true })(
    (it) => {
      it.effect("concurrent reads of different organizations each get their own row; unknown is OrgNotFound", () =>
        Effect.gen(function*() {
          const orgs = yield* Organizations
          const a = yield* orgs.create({ name: "a", perMinute: 1, perWeek: 2 })
          const b = yield* orgs.create({ name: "b", perMinute: 3, perWeek: 4 })
          const unknown = randomUUID()
          const results = yield* Effect.all(
            [a.uuid, b.uuid, unknown, a.uuid.toUpperCase(), b.uuid].map((uuid) => Effect.result(orgs.secretOf(uuid))),
            { concurrency: "unbounded" }
          )
          const ok = results.map((r) =>
            r._tag === "Success" ? [r.success.org.name, Redacted.value(r.success.secret)] : r.failure.reason._tag
          )
          assert.deepStrictEqual(ok, [["a", a.secret], ["b", b.secret], "OrgNotFound", ["a", a.secret], [
            "b",
            b.secret
          ]])
        }))

      it.effect("rotation, deactivation and new limits show on the very next read", () =>
        Effect.gen(function*() {
          const orgs = yield* Organizations
          const created = yield* orgs.create({ name: "changing", perMinute: 0, perWeek: 0 })
          assert.strictEqual(Redacted.value((yield* orgs.secretOf(created.uuid)).secret), created.secret)
          const rotated = yield* orgs.rotateSecret(created.uuid)
          assert.strictEqual(Redacted.value((yield* orgs.secretOf(created.uuid)).secret), rotated.secret)
          yield* orgs.setActive(created.uuid, false)
          assert.isFalse((yield* orgs.secretOf(created.uuid)).org.isActive)
          yield* orgs.setActive(created.uuid, true)
          yield* orgs.setLimits(created.uuid, { perMinute: 9 })
          const after = (yield* orgs.secretOf(created.uuid)).org
          assert.deepStrictEqual([after.isActive, after.perMinute, after.perWeek], [true, 9, 0])
        }))
    }
  )
})
