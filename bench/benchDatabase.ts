/**
 * A large bench database kept between runs: ../shared/data and COUNT records
 * cloned from it (`ingestClones.ts`), ingested once into
 * `vdb_cache_<kind>_<key>`, where the key hashes what produced it: the clone
 * generator, the data folder's manifest, COUNT and every migration. Changing
 * any of them makes a new database (and drops the older ones of that kind);
 * otherwise a run starts from the stored one in seconds rather than minutes.
 * A build that does not finish leaves no database under the final name.
 */
import { Effect, Layer, Redacted, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { hash } from "node:crypto"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { layerPostgres } from "../src/db/Database.ts"
import { MigrationsLayer } from "../src/db/Migrations.ts"
import { ingest } from "../src/ingest/Ingest.ts"
import { VulnStore } from "../src/vulns/VulnStore.ts"
import { generateClones } from "./ingestClones.ts"
import { psql } from "./scratchDatabase.ts"

const DATA = fileURLToPath(new URL("../../shared/data", import.meta.url))
const MIGRATIONS = fileURLToPath(new URL("../src/db/migrations/", import.meta.url))
const GENERATOR = fileURLToPath(new URL("./ingestClones.ts", import.meta.url))

export const databaseUrl = (name: string) => `postgres://postgres@127.0.0.1:5432/${name}`

const generatorKey = (count: number) => {
  const parts = [
    `count=${count}`,
    readFileSync(GENERATOR, "utf8"),
    readFileSync(join(DATA, "manifest.json"), "utf8"),
    ...readdirSync(MIGRATIONS).sort().map((file) => `${file}\n${readFileSync(join(MIGRATIONS, file), "utf8")}`)
  ]
  return hash("sha256", parts.join("\u0000"), "hex").slice(0, 12)
}

/** The cached database's name, built first when missing (minutes for a million records). */
export const benchDatabase = (kind: string, count: number) =>
  Effect.gen(function*() {
    const prefix = `vdb_cache_${kind}_${count}_`
    const name = `${prefix}${generatorKey(count)}`
    const existing = (yield* Effect.promise(() =>
      psql(`SELECT datname FROM pg_database WHERE datname LIKE '${prefix.replaceAll("_", "\\_")}%'`)
    ))
      .split("\n").filter((n) =>
        n !== ""
      )
    // Another count's database, or one being built (by a run that may still be going), stays.
    for (const stale of existing.filter((n) => n !== name && !n.endsWith("_building"))) {
      console.error(`dropping ${stale}: its generator or the migrations changed`)
      yield* Effect.promise(() => psql(`DROP DATABASE IF EXISTS ${stale} WITH (FORCE)`))
    }
    if (existing.includes(name)) {
      console.error(`reusing ${name}`)
      return name
    }
    const building = `${name}_building`
    yield* Effect.promise(() => psql(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`))
    yield* Effect.promise(() => psql(`CREATE DATABASE ${building}`))
    const work = mkdtempSync(join(tmpdir(), `vdb-bench-${kind}-`))
    yield* Effect.scoped(Effect.gen(function*() {
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(work, { recursive: true, force: true })))
      console.error(`building ${name}: ../shared/data and ${count} cloned records (once; later runs reuse it) …`)
      const started = performance.now()
      yield* generateClones(DATA, work, count)
      const lap = (what: string) =>
        Effect.sync(() => console.error(`  ${what}: ${Math.round((performance.now() - started) / 1000)} s`))
      yield* lap("generated")
      const Store = VulnStore.layer.pipe(
        Layer.provideMerge(Layer.provideMerge(MigrationsLayer, layerPostgres(Redacted.make(databaseUrl(building)), 4)))
      )
      yield* Effect.gen(function*() {
        yield* ingest({ paths: [], all: DATA }, { batchSize: 2000 }).pipe(Stream.runDrain)
        yield* lap("corpus ingested")
        yield* ingest({ paths: [], all: work }, { batchSize: 2000 }).pipe(Stream.runDrain)
        yield* lap("generated set ingested")
        const sql = yield* SqlClient.SqlClient
        yield* sql`VACUUM ANALYZE`.pipe(Effect.orDie)
      }).pipe(Effect.provide(Store))
      console.error(`  built in ${Math.round((performance.now() - started) / 1000)} s`)
    }))
    yield* Effect.promise(() => psql(`ALTER DATABASE ${building} RENAME TO ${name}`))
    return name
  })
