import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Redacted } from "effect"
import { layerPostgres } from "../../src/db/Database.ts"
import { MigrationsLayer } from "../../src/db/Migrations.ts"
import { Policies } from "../../src/policies/Policies.ts"
import { admits } from "../../src/policies/PolicySnapshot.ts"
import { throwawayDatabase } from "../support/database.ts"

const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"

/** One gateway "process": its own pool, LISTEN session and snapshot cache; a TTL far longer than the test. */
const gatewayProcess = (url: string) =>
  Effect.map(
    Layer.build(Policies.layer.pipe(
      Layer.provide(layerPostgres(Redacted.make(url), 2)),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ VDB_GATEWAY_KEY_CACHE_TTL: "60 seconds" }))),
      Layer.orDie
    )),
    (context) => Context.get(context, Policies)
  )

const eventually = (check: Effect.Effect<boolean, unknown>, limitMs = 2000) =>
  Effect.gen(function*() {
    const start = Date.now()
    while (!(yield* check)) {
      if (Date.now() - start > limitMs) return assert.fail(`not propagated within ${limitMs} ms`)
      yield* Effect.sleep("10 millis")
    }
  })

describe("policy changes between gateway processes (postgresql, LISTEN/NOTIFY)", () => {
  it.live(
    "an allow entry added on one process switches the other to allowlist mode at once, not after the TTL",
    () =>
      Effect.gen(function*() {
        const db = yield* throwawayDatabase
        yield* Layer.build(MigrationsLayer.pipe(Layer.provide(layerPostgres(Redacted.make(db.url), 1)), Layer.orDie))
        const a = yield* gatewayProcess(db.url)
        const b = yield* gatewayProcess(db.url)
        const modelOn = (p: Policies["Service"]) =>
          Effect.map(p.snapshot(ORG), (s) => admits(s.forProvider("openai").models, "gpt-4o"))
        assert.strictEqual(yield* modelOn(b), "ok")
        const entry = yield* a.add(ORG, { kind: "model", effect: "allow", provider: "openai", value: "gpt-4.1" })
        assert.strictEqual(yield* modelOn(a), "not_allowed")
        yield* eventually(Effect.map(modelOn(b), (r) => r === "not_allowed"))
        yield* b.remove(ORG, entry.uuid)
        yield* eventually(Effect.map(modelOn(a), (r) => r === "ok"))
      }).pipe(Effect.scoped),
    60_000
  )
})
