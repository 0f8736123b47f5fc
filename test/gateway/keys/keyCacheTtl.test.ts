import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect } from "effect"
import { keyCacheTtl } from "../../../src/cache/KeyCacheTtl.ts"
import { generateServiceKey, isServiceKeyShaped } from "../../../src/servicekeys/ServiceKeyFormat.ts"

const ttlOf = (env: Record<string, string>) =>
  Effect.gen(function*() {
    return yield* keyCacheTtl
  }).pipe(
    Effect.map(Duration.toMillis),
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown(env))
  )

describe("VDB_GATEWAY_KEY_CACHE_TTL", () => {
  it.effect("defaults to 30 s, reads durations or plain seconds, and never exceeds 60 s", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* ttlOf({}), 30_000)
      assert.strictEqual(yield* ttlOf({ VDB_GATEWAY_KEY_CACHE_TTL: "10 seconds" }), 10_000)
      assert.strictEqual(yield* ttlOf({ VDB_GATEWAY_KEY_CACHE_TTL: "15" }), 15_000)
      assert.strictEqual(yield* ttlOf({ VDB_GATEWAY_KEY_CACHE_TTL: "0" }), 0)
      assert.strictEqual(yield* ttlOf({ VDB_GATEWAY_KEY_CACHE_TTL: "5 minutes" }), 60_000)
      assert.isTrue((yield* Effect.exit(ttlOf({ VDB_GATEWAY_KEY_CACHE_TTL: "soon" })))._tag === "Failure")
    }))
})

describe("service key format", () => {
  it("is vdb_sk_ plus 43 base62 characters, distinct each time, never a provider key's shape", () => {
    const keys = new Set(Array.from({ length: 200 }, generateServiceKey))
    assert.strictEqual(keys.size, 200)
    for (const key of keys) assert.isTrue(isServiceKeyShaped(key), key)
    for (const other of ["sk-proj-abc", "sk-ant-api03-abc", "vdb_sk_short", `Bearer ${[...keys][0]}`, "ApiKey x:y"]) {
      assert.isFalse(isServiceKeyShaped(other), other)
    }
  })
})
