import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { createHmac } from "node:crypto"
import { Invalidation } from "../../src/db/Invalidation.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { SqlBackends } from "../support/database.ts"
import { SecretBoxTest } from "../support/secrets.ts"

const backends = [
  ...SqlBackends.map(({ name, layer }) => ({
    name,
    layer: Organizations.layer.pipe(Layer.provideMerge(Layer.merge(layer, SecretBoxTest)))
  })),
  { name: "memory", layer: Organizations.layerMemory.pipe(Layer.provide(Invalidation.layerMemory)) }
]

describe.each(backends)("Organizations ($name)", ({ layer: backend }) => {
  layer(backend, { excludeTestServices: true })((it) => {
    it.effect("creates an organization whose API key is HMAC-SHA256(secret, uuid)", () =>
      Effect.gen(function*() {
        const orgs = yield* Organizations
        const created = yield* orgs.create({ name: "acme" })
        assert.match(created.uuid, /^[0-9a-f-]{36}$/)
        assert.match(created.secret, /^[0-9a-f]{64}$/)
        const expected = createHmac("sha256", created.secret).update(created.uuid).digest("hex")
        assert.strictEqual(created.apiKey, `ApiKey ${created.uuid}:${expected}`)
        const shown = yield* orgs.show(created.uuid)
        assert.deepStrictEqual(
          [shown.name, shown.isActive, shown.perMinute, shown.perWeek],
          ["acme", true, 5, 1000]
        )
      }))

    it.effect("rotates the secret, deactivates, reactivates and sets limits", () =>
      Effect.gen(function*() {
        const orgs = yield* Organizations
        const created = yield* orgs.create({ name: "rotating", perMinute: 0, perWeek: 7 })
        const rotated = yield* orgs.rotateSecret(created.uuid)
        assert.notStrictEqual(rotated.secret, created.secret)
        const { secret } = yield* orgs.secretOf(created.uuid)
        assert.strictEqual(Redacted.value(secret), rotated.secret)
        assert.isFalse((yield* orgs.setActive(created.uuid, false)).isActive)
        assert.isFalse((yield* orgs.secretOf(created.uuid)).org.isActive)
        assert.isTrue((yield* orgs.setActive(created.uuid, true)).isActive)
        const limited = yield* orgs.setLimits(created.uuid, { perWeek: 0 })
        assert.deepStrictEqual([limited.perMinute, limited.perWeek], [0, 0])
        const listed = yield* orgs.list()
        assert.isTrue(listed.some((o) => o.uuid === created.uuid))
      }))

    it.effect("two limit changes at once keep both: a limit not given keeps the stored value", () =>
      Effect.gen(function*() {
        const orgs = yield* Organizations
        const created = yield* orgs.create({ name: "limits-race", perMinute: 1, perWeek: 1 })
        for (let trial = 2; trial < 22; trial++) {
          yield* Effect.all([
            orgs.setLimits(created.uuid, { perMinute: trial }),
            orgs.setLimits(created.uuid, { perWeek: trial * 10 })
          ], { concurrency: "unbounded" })
          const shown = yield* orgs.show(created.uuid)
          assert.deepStrictEqual([shown.perMinute, shown.perWeek], [trial, trial * 10])
        }
      }))

    it.effect("rejects bad input with a typed error and writes nothing", () =>
      Effect.gen(function*() {
        const orgs = yield* Organizations
        const before = (yield* orgs.list()).length
        const unknown = yield* Effect.flip(orgs.show("00000000-0000-4000-8000-000000000000"))
        assert.strictEqual(unknown.reason._tag, "OrgNotFound")
        const malformed = yield* Effect.flip(orgs.rotateSecret("not-a-uuid"))
        assert.strictEqual(malformed.reason._tag, "OrgInvalid")
        const negative = yield* Effect.flip(orgs.create({ name: "x", perMinute: -1 }))
        assert.strictEqual(negative.reason._tag, "OrgInvalid")
        const empty = yield* Effect.flip(orgs.create({ name: "  " }))
        assert.strictEqual(empty.reason._tag, "OrgInvalid")
        assert.strictEqual((yield* orgs.list()).length, before)
      }))
  })
})

describe.each(SqlBackends)("secrets at rest ($name)", ({ layer: sqlLayer }) => {
  layer(Organizations.layer.pipe(Layer.provideMerge(Layer.merge(sqlLayer, SecretBoxTest))), {
    excludeTestServices: true
  })((it) => {
    it.effect("stores the secret sealed, never in the clear", () =>
      Effect.gen(function*() {
        const orgs = yield* Organizations
        const sql = yield* SqlClient.SqlClient
        const created = yield* orgs.create({ name: "sealed" })
        const rows = yield* sql<{ secret_sealed: string }>`SELECT secret_sealed FROM organizations
          WHERE uuid = ${created.uuid}::uuid`
        assert.notInclude(rows[0]!.secret_sealed, created.secret)
        assert.match(rows[0]!.secret_sealed, /^v1\.[0-9a-f]{12}\./)
      }))
  })
})
