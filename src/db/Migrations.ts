import { Effect, Layer, Schema } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { splitStatements } from "./SqlStatements.ts"

/** `src/db/migrations/NNNN_name.sql`; ids only ever grow (the migrator skips ids below the latest applied). */
export const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations/", import.meta.url))

const FILE = /^(\d+)_([^.]+)\.sql$/

/** Loads the plain SQL migration files as effects for the effect SQL migrator. */
export const sqlFileLoader = (directory: string = MIGRATIONS_DIR): Migrator.Loader =>
  Effect.try({
    try: () =>
      readdirSync(directory)
        .flatMap((file): Array<Migrator.ResolvedMigration> => {
          const match = FILE.exec(file)
          if (match === null) return []
          const load = Effect.sync(() => {
            const statements = splitStatements(readFileSync(`${directory}/${file}`, "utf8"))
            return Effect.gen(function*() {
              const sql = yield* SqlClient.SqlClient
              for (const statement of statements) yield* sql.unsafe(statement)
            })
          })
          return [[Number(match[1]), match[2]!, load]]
        })
        .sort(([a], [b]) => a - b),
    catch: (cause) => new Migrator.MigrationError({ kind: "Failed", cause, message: `cannot read ${directory}` })
  })

const migrate = Migrator.make({})

/** Applies pending migrations; returns the ones it ran. */
export const runMigrations = migrate({ loader: sqlFileLoader(), table: "vdb_migrations" })

/** Runs the migrations when the layer is built (server start, CLI in-process mode). */
export const MigrationsLayer = Layer.effectDiscard(
  runMigrations.pipe(
    Effect.mapError((e) => new MigrationFailed({ message: `database migration failed: ${e.message}`, cause: e }))
  )
)

export class MigrationFailed extends Schema.TaggedError<MigrationFailed>()("MigrationFailed", {
  message: Schema.String,
  // Kept so the CLI can say what went wrong (e.g. cannot connect) in words (src/cli/FailureMessage.ts).
  cause: Schema.optional(Schema.Defect())
}) {}
