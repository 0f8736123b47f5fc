import { assert, describe, layer } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { Invalidation } from "../../../src/db/Invalidation.ts"
import { Organizations } from "../../../src/orgs/Organizations.ts"
import { isServiceKeyShaped } from "../../../src/servicekeys/ServiceKeyFormat.ts"
import { ServiceKeys } from "../../../src/servicekeys/ServiceKeys.ts"
import { PostgresTest, SqlBackends } from "../../support/database.ts"
import { SecretBoxTest } from "../../support/secrets.ts"

const backends = [
  ...SqlBackends.map(({ name, layer }) => ({
    name,
    layer: ServiceKeys.layer.pipe(
      Layer.provideMerge(Organizations.layer),
      Layer.provideMerge(Layer.merge(layer, SecretBoxTest))
    )
  })),
  {
    name: "memory",
    layer: ServiceKeys.layerMemory.pipe(
      Layer.provideMerge(Organizations.layerMemory),
      Layer.provide(Invalidation.layerMemory)
    )
  }
]

describe.each(backends)("ServiceKeys ($name)", ({ layer: backend }) => {
  layer(backend, { excludeTestServices: true })((it) => {
    it.effect("issues a recognisable key that verifies only for its organization", () =>
      Effect.gen(function*() {
        const orgs = yield* Organizations
        const keys = yield* ServiceKeys
        const a = yield* orgs.create({ name: "a" })
        const b = yield* orgs.create({ name: "b" })
        const { key } = yield* keys.create(a.uuid)
        assert.match(key, /^vdb_sk_[0-9A-Za-z]{43}$/)
        assert.strictEqual(yield* keys.verify(a.uuid, key), "valid")
        assert.strictEqual(yield* keys.verify(a.uuid.toUpperCase(), key), "valid")
        assert.strictEqual(yield* keys.verify(b.uuid, key), "invalid")
        assert.strictEqual(yield* keys.verify(a.uuid, key.slice(0, -1) + (key.endsWith("a") ? "b" : "a")), "invalid")
        assert.strictEqual(yield* keys.verify(b.uuid, ""), "invalid")
      }))

    it.effect("rotation replaces the old key at once; create refuses a second key", () =>
      Effect.gen(function*() {
        const orgs = yield* Organizations
        const keys = yield* ServiceKeys
        const org = yield* orgs.create({ name: "rotating" })
        const first = yield* keys.create(org.uuid)
        assert.strictEqual(yield* keys.verify(org.uuid, first.key), "valid")
        const again = yield* Effect.exit(keys.create(org.uuid))
        assert.isTrue(Exit.isFailure(again))
        assert.strictEqual(yield* keys.verify(org.uuid, first.key), "valid")
        const second = yield* keys.issue(org.uuid)
        assert.notStrictEqual(second.key, first.key)
        assert.strictEqual(yield* keys.verify(org.uuid, first.key), "invalid")
        assert.strictEqual(yield* keys.verify(org.uuid, second.key), "valid")
        assert.isTrue(yield* keys.revoke(org.uuid))
        assert.strictEqual(yield* keys.verify(org.uuid, second.key), "invalid")
      }))

    it.effect("refuses inactive, unknown and malformed organizations and provider keys", () =>
      Effect.gen(function*() {
        const orgs = yield* Organizations
        const keys = yield* ServiceKeys
        const org = yield* orgs.create({ name: "sleepy" })
        const { key } = yield* keys.issue(org.uuid)
        assert.strictEqual(yield* keys.verify(org.uuid, key), "valid")
        // The cached state goes with the change itself: no TTL to wait out, no manual eviction.
        yield* orgs.setActive(org.uuid, false)
        assert.strictEqual(yield* keys.verify(org.uuid, key), "invalid")
        yield* orgs.setActive(org.uuid, true)
        assert.strictEqual(yield* keys.verify(org.uuid, key), "valid")

        const unknown = "6f1c2b9e-8d4a-4c1e-9b7a-2f3e4d5c6b7a"
        assert.strictEqual(yield* keys.verify(unknown, key), "invalid")
        assert.strictEqual(yield* keys.verify("not-a-uuid", key), "invalid")
        const issued = yield* Effect.flip(keys.issue(unknown))
        assert.strictEqual(issued._tag, "OrgUnknown")
        assert.strictEqual((yield* Effect.flip(keys.issue("nope")))._tag, "OrgUnknown")

        for (const providerKey of ["sk-proj-abcdefghijklmnopqrstuvwxyz0123456789", "sk-ant-api03-abcdefghijklmnop"]) {
          assert.isFalse(isServiceKeyShaped(providerKey))
          assert.strictEqual(yield* keys.verify(org.uuid, providerKey), "invalid")
        }
      }))
  })
})

const SqlKeys = ServiceKeys.layer.pipe(
  Layer.provideMerge(Organizations.layer),
  Layer.provideMerge(Layer.merge(PostgresTest, SecretBoxTest))
)

describe("ServiceKeys at rest (postgresql)", () => {
  layer(SqlKeys, { excludeTestServices: true })((it) => {
    it.effect("stores only a verifier, never the key", () =>
      Effect.gen(function*() {
        const orgs = yield* Organizations
        const keys = yield* ServiceKeys
        const db = yield* SqlClient.SqlClient
        const org = yield* orgs.create({ name: "at-rest" })
        const { key } = yield* keys.issue(org.uuid)
        const rows = yield* db<Record<string, unknown>>`SELECT * FROM gateway_service_keys WHERE org_uuid = ${org.uuid}`
        assert.strictEqual(rows.length, 1)
        const stored = JSON.stringify(rows)
        assert.notInclude(stored, key)
        assert.notInclude(stored, key.slice("vdb_sk_".length))
        assert.strictEqual(rows[0]!.verifier, createHash("sha256").update(key).digest("hex"))
      }))
  })
})
