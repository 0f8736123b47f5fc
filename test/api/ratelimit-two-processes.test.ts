import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { layerPostgres } from "../../src/db/Database.ts"
import { MigrationsLayer } from "../../src/db/Migrations.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { SecretBox } from "../../src/secrets/SecretBox.ts"
import { throwawayDatabase } from "../support/database.ts"
import { SecretBoxTest } from "../support/secrets.ts"
import { fixtureStore, record, serveApi } from "./harness.ts"

const store = fixtureStore({
  lookups: { "CVE-2021-44228": { aliases: [], records: [record("mitre", "CVE-2021-44228")] } },
  exploits: {}
})

layer(SecretBoxTest, { excludeTestServices: true, timeout: 120_000 })((it) => {
  it.effect("two API servers sharing one PostgreSQL admit exactly the limit under concurrent load", () =>
    Effect.scoped(Effect.gen(function*() {
      const db = yield* throwawayDatabase
      const box = yield* SecretBox
      // Two independent pools, as two processes would have; one master key.
      const process = () =>
        Layer.mergeAll(Organizations.layer, store).pipe(
          Layer.provideMerge(layerPostgres(Redacted.make(db.url), 8)),
          Layer.provideMerge(Layer.succeed(SecretBox, box)),
          Layer.orDie
        )
      yield* Layer.build(MigrationsLayer.pipe(Layer.provide(layerPostgres(Redacted.make(db.url), 1)), Layer.orDie))
      const a = yield* serveApi(process())
      const b = yield* serveApi(process())
      const orgs = Context.get(yield* Layer.build(process()), Organizations)
      const LIMIT = 25
      const org = yield* orgs.create({ name: "shared", perMinute: 0, perWeek: LIMIT })

      const statuses = yield* Effect.forEach(
        Array.from({ length: 120 }, (_, i) => (i % 2 === 0 ? a : b)),
        (base) =>
          Effect.promise(async () => {
            const r = await fetch(`${base}/vuln/CVE-2021-44228`, { headers: { authorization: org.apiKey } })
            await r.arrayBuffer()
            return r.status
          }),
        { concurrency: 40 }
      )
      assert.strictEqual(statuses.filter((s) => s === 200).length, LIMIT)
      assert.strictEqual(statuses.filter((s) => s === 429).length, 120 - LIMIT)
    })))
})
