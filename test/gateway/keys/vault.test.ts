import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { Invalidation } from "../../../src/db/Invalidation.ts"
import { SecretBox } from "../../../src/secrets/SecretBox.ts"
import { ProviderKeys } from "../../../src/vault/ProviderKeys.ts"
import { openProviderKey, sealProviderKey } from "../../../src/vault/SealedProviderKey.ts"
import { PostgresTest } from "../../support/database.ts"
import { SecretBoxTest } from "../../support/secrets.ts"

const ORG = "0b6f3c1e-2a4d-4e8f-9c1b-3d5e7f9a1b2c"
const OTHER_ORG = "7d2e4f6a-8b1c-4d3e-8f5a-6b7c8d9e0f1a"
const OPENAI_KEY = "sk-proj-test-0123456789abcdefghijklmnopqrstuvwxyz"

const backends = [
  { name: "postgresql", layer: ProviderKeys.layer.pipe(Layer.provideMerge(Layer.merge(PostgresTest, SecretBoxTest))) },
  {
    name: "memory",
    layer: ProviderKeys.layerMemory.pipe(Layer.provideMerge(SecretBoxTest), Layer.provide(Invalidation.layerMemory))
  }
]

describe.each(backends)("ProviderKeys ($name)", ({ layer: backend }) => {
  layer(backend, { excludeTestServices: true })((it) => {
    it.effect("stores, opens, lists (providers and timestamps only) and removes a key", () =>
      Effect.gen(function*() {
        const vault = yield* ProviderKeys
        const missing = yield* Effect.flip(vault.get(ORG, "openai"))
        assert.strictEqual(missing._tag, "ProviderKeyMissing")
        yield* vault.set(ORG, "openai", Redacted.make(OPENAI_KEY))
        const key = yield* vault.get(ORG, "openai")
        assert.strictEqual(Redacted.value(key), OPENAI_KEY)
        assert.notInclude(String(key), OPENAI_KEY)
        assert.notInclude(JSON.stringify(key), OPENAI_KEY)
        assert.strictEqual((yield* Effect.flip(vault.get(ORG, "anthropic")))._tag, "ProviderKeyMissing")
        assert.strictEqual((yield* Effect.flip(vault.get(OTHER_ORG, "openai")))._tag, "ProviderKeyMissing")

        yield* vault.set(ORG, "openai", Redacted.make("sk-replaced"))
        assert.strictEqual(Redacted.value(yield* vault.get(ORG, "openai")), "sk-replaced")
        yield* vault.set(ORG, "anthropic", Redacted.make("sk-ant-api03-xyz"))
        const listed = yield* vault.list(ORG)
        assert.deepStrictEqual(listed.map((e) => e.provider), ["anthropic", "openai"])
        for (const entry of listed) {
          assert.deepStrictEqual(Object.keys(entry).sort(), ["createdAt", "provider", "updatedAt"])
          assert.isTrue(entry.updatedAt.getTime() >= entry.createdAt.getTime())
        }
        assert.notInclude(JSON.stringify(listed), "sk-")

        assert.isTrue(yield* vault.remove(ORG, "openai"))
        assert.isFalse(yield* vault.remove(ORG, "openai"))
        assert.strictEqual((yield* Effect.flip(vault.get(ORG, "openai")))._tag, "ProviderKeyMissing")
      }))
  })
})

const SqlVault = ProviderKeys.layer.pipe(Layer.provideMerge(Layer.merge(PostgresTest, SecretBoxTest)))

describe("ProviderKeys at rest (postgresql)", () => {
  layer(SqlVault, { excludeTestServices: true })((it) => {
    it.effect("keeps keys sealed at rest and refuses a ciphertext moved to another provider or organization", () =>
      Effect.gen(function*() {
        const vault = yield* ProviderKeys
        const db = yield* SqlClient.SqlClient
        const box = yield* SecretBox
        yield* vault.set(OTHER_ORG, "openai", Redacted.make(OPENAI_KEY))
        const rows = yield* db<Record<string, unknown>>`SELECT * FROM provider_keys`
        assert.isAbove(rows.length, 0)
        assert.notInclude(JSON.stringify(rows), OPENAI_KEY)
        assert.notInclude(JSON.stringify(rows), "sk-proj")
        const row = rows.find((r) => r.org_uuid === OTHER_ORG && r.provider === "openai")!
        assert.strictEqual(row.key_id, box.keyId)

        // Copy the sealed openai key into an anthropic row and into another organization's row.
        yield* db`INSERT INTO provider_keys (org_uuid, provider, sealed, key_id)
          VALUES (${OTHER_ORG}, 'anthropic', ${row.sealed as string}, ${box.keyId}),
                 (${ORG}, 'groq', ${row.sealed as string}, ${box.keyId})`
        const fresh = yield* freshVault
        assert.strictEqual(Redacted.value(yield* fresh.get(OTHER_ORG, "openai")), OPENAI_KEY)
        assert.strictEqual((yield* Effect.flip(fresh.get(OTHER_ORG, "anthropic")))._tag, "ProviderKeyUnreadable")
        assert.strictEqual((yield* Effect.flip(fresh.get(ORG, "groq")))._tag, "ProviderKeyUnreadable")

        // Corrupted ciphertext.
        yield* db`UPDATE provider_keys SET sealed = ${(row.sealed as string).slice(0, -4) + "AAAA"}
          WHERE org_uuid = ${OTHER_ORG} AND provider = 'anthropic'`
        assert.strictEqual(
          (yield* Effect.flip((yield* freshVault).get(OTHER_ORG, "anthropic")))._tag,
          "ProviderKeyUnreadable"
        )
      }))

    it.effect("a different master key cannot open stored keys (502 unreadable)", () =>
      Effect.gen(function*() {
        const vault = yield* ProviderKeys
        yield* vault.set(ORG, "mistral", Redacted.make("mistral-secret"))
        const otherMaster = yield* Layer.build(
          Layer.fresh(ProviderKeys.layer.pipe(Layer.provide(Layer.fresh(SecretBoxTest))))
        )
        const err = yield* Effect.flip(Context.get(otherMaster, ProviderKeys).get(ORG, "mistral"))
        assert.strictEqual(err._tag, "ProviderKeyUnreadable")
        assert.notInclude(JSON.stringify(err), "mistral-secret")
      }).pipe(Effect.scoped))
  })
})

/** A second vault instance over the same database and master key, with an empty cache. */
const freshVault = Effect.gen(function*() {
  const context = yield* Layer.build(Layer.fresh(ProviderKeys.layer))
  return Context.get(context, ProviderKeys)
}).pipe(Effect.scoped)

describe("SealedProviderKey", () => {
  layer(SecretBoxTest)((it) => {
    it.effect("binds organization and provider into the sealed payload", () =>
      Effect.gen(function*() {
        const box = yield* SecretBox
        const sealed = yield* sealProviderKey(box, ORG, "openai", OPENAI_KEY)
        assert.notInclude(sealed, OPENAI_KEY)
        assert.strictEqual(yield* openProviderKey(box, sealed, ORG, "openai"), OPENAI_KEY)
        assert.isTrue((yield* Effect.exit(openProviderKey(box, sealed, ORG, "anthropic")))._tag === "Failure")
        assert.isTrue((yield* Effect.exit(openProviderKey(box, sealed, OTHER_ORG, "openai")))._tag === "Failure")
        const bare = yield* box.seal(OPENAI_KEY)
        assert.isTrue((yield* Effect.exit(openProviderKey(box, bare, ORG, "openai")))._tag === "Failure")
      }))
  })
})
