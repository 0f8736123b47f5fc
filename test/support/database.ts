import { PgClient } from "@effect/sql-pg"
import { Config, Effect, Layer, Redacted } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import type { SqlClient } from "effect/sql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerPglite, layerPostgres } from "../../src/db/Database.ts"
import type { Invalidation } from "../../src/db/Invalidation.ts"
import { MigrationsLayer } from "../../src/db/Migrations.ts"

/** The local PostgreSQL server integration tests run against (trust auth on this machine kind). */
export const AdminUrl = Config.String("VDB_TEST_PG_URL").pipe(
  Config.withDefault("postgres://postgres@127.0.0.1:5432/postgres")
)

const withDatabase = (url: string, name: string) => {
  const parsed = new URL(url)
  parsed.pathname = `/${name}`
  return parsed.toString()
}

/**
 * What the test run's global setup (test/support/globalSetup.ts) hands the test processes: the
 * prefix of every database this run makes, and a migrated database new migrated ones are copied
 * from. Unset when no global setup ran: a database is then dropped when its scope closes.
 */
const runPrefix = () => process.env.VDB_TEST_DB_PREFIX
const migratedTemplate = () => process.env.VDB_TEST_DB_TEMPLATE

const makeDatabase = (template: string | undefined) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const adminUrl = yield* AdminUrl
      const prefix = runPrefix() ?? "vdb_test_"
      const name = `${prefix}${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
      yield* adminQuery(adminUrl, `CREATE DATABASE ${name}${template === undefined ? "" : ` TEMPLATE ${template}`}`)
      return { name, url: withDatabase(adminUrl, name), adminUrl }
    }),
    // PostgreSQL 15 checkpoints at every DROP DATABASE (1-3 s on a busy 2-core VM, each at the end of a
    // test file): in a run, the global teardown drops them all at once instead (one checkpoint serves them).
    ({ adminUrl, name }) =>
      runPrefix() === undefined
        ? adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
        : Effect.void
  )

/**
 * A throwaway database on the local server for the lifetime of the scope: created empty; dropped
 * (with its connections) at the end of the test run, or when the scope closes outside one.
 */
export const throwawayDatabase = Effect.suspend(() => makeDatabase(undefined))

/**
 * A throwaway database with every migration applied: a copy of the run's migrated database (made
 * once by the global setup, as the embedded databases start from src/db/MigratedTemplate.ts), or
 * an empty one without it. Migrating each one took about 2 s of the database server's time.
 */
export const migratedThrowawayDatabase = Effect.suspend(() => makeDatabase(migratedTemplate()))

/** Runs one statement on the maintenance database (CREATE/DROP DATABASE). */
export const adminQuery = (adminUrl: string, statement: string) =>
  Effect.scoped(Effect.gen(function*() {
    const admin = yield* PgClient.make({ url: Redacted.make(adminUrl), maxConnections: 1 })
    yield* admin.unsafe(statement)
  })).pipe(Effect.provide(Reactivity.layer), Effect.orDie)

/** A migrated throwaway PostgreSQL database (copied migrated; the migrator still runs and finds nothing to do). */
export const PostgresTest: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | Invalidation> = Layer.unwrap(
  Effect.map(migratedThrowawayDatabase, ({ url }) => layerPostgres(Redacted.make(url), 4))
).pipe(withMigrations, Layer.orDie)

/** A migrated embedded PGlite in a temporary folder. */
export const PgliteTest: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | Invalidation> = Layer.unwrap(
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => mkdtempSync(join(tmpdir(), "vdb-pglite-"))),
      (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
    ),
    (dir) => layerPglite(join(dir, "pglite"))
  )
).pipe(withMigrations, Layer.orDie)

function withMigrations<E, R>(layer: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | Invalidation, E, R>) {
  return Layer.provideMerge(MigrationsLayer, layer)
}

/** The same suite runs on both: `describe.each(SqlBackends)`. */
export const SqlBackends = [
  { name: "postgresql", layer: PostgresTest },
  { name: "pglite", layer: PgliteTest }
] as const
