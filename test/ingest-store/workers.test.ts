import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Stream } from "effect"
import { layerPostgres } from "../../src/db/Database.ts"
import { MigrationsLayer } from "../../src/db/Migrations.ts"
import { ingest } from "../../src/ingest/Ingest.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { FIXTURES } from "../ingest/corpus.ts"
import { throwawayDatabase } from "../support/database.ts"
import { digestDatabase } from "./digest.ts"

/** Ingests the fixtures into a fresh database with the given number of normalising workers; the tables' digest. */
const digestAfter = (workers: number) =>
  Effect.gen(function*() {
    const { url } = yield* throwawayDatabase
    const Store = VulnStore.layer.pipe(
      Layer.provideMerge(Layer.provideMerge(MigrationsLayer, layerPostgres(Redacted.make(url), 2)))
    )
    const last = yield* ingest({ paths: [], all: FIXTURES }, { workers, batchSize: 300 }).pipe(
      Stream.runLast,
      Effect.provide(Store)
    )
    assert.isTrue(last._tag === "Some" && last.value._tag === "Summary" && last.value.skipped === 0)
    return yield* digestDatabase(url)
  })

describe("normalising on worker threads", () => {
  it.effect("gives exactly the database inline normalisation gives", () =>
    Effect.scoped(Effect.gen(function*() {
      const inline = yield* digestAfter(0)
      const pooled = yield* digestAfter(2)
      assert.deepStrictEqual(pooled, inline)
    })).pipe(Effect.orDie), { timeout: 60_000 })
})
