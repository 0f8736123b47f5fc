import { PgClient } from "@effect/sql-pg"
import { Cause, Effect, Layer, type Redacted, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { mkdirSync } from "node:fs"
import { resolve } from "node:path"
import { countPool } from "./CountedPool.ts"
import { lockDataDir } from "./DataDirLock.ts"
import { Invalidation } from "./Invalidation.ts"
import { newClusterTemplate } from "./MigratedTemplate.ts"
import { openPglite } from "./PgliteTemplate.ts"

export class DatabaseError extends Schema.TaggedError<DatabaseError>()("DatabaseError", {
  message: Schema.String
}) {}

/** A database comes with its invalidation bus: the one every cache over it must hear. */
type SqlLayer = Layer.Layer<PgClient.PgClient | SqlClient.SqlClient | Invalidation, DatabaseError>

const sqlFailure = (what: string) => <A, E extends { readonly message: string }, R>(layer: Layer.Layer<A, E, R>) =>
  Layer.catchCause(layer, (cause) =>
    Layer.effectDiscard(Effect.fail(
      new DatabaseError({
        message: `${what}: ${
          Cause.squash(cause) instanceof Error ? (Cause.squash(cause) as Error).message : String(Cause.squash(cause))
        }`
      })
    ))) as unknown as Layer.Layer<A, DatabaseError, R>

/** Real PostgreSQL through a pool. */
export const layerPostgres = (url: Redacted.Redacted, maxConnections: number): SqlLayer =>
  PgClient.layer({ url, maxConnections, applicationName: "vdb" }).pipe(
    // The pool's connections in use and statements waiting, for /metrics (src/db/CountedPool.ts).
    countPool,
    sqlFailure("cannot connect to PostgreSQL (DATABASE_URL)"),
    // Several processes may share this database: cache invalidations travel over LISTEN/NOTIFY.
    (sql) => Layer.provideMerge(Layer.fresh(Invalidation.layerPostgres), sql)
  )

/**
 * PGlite's WebAssembly memory only grows, and every page PostgreSQL touches
 * stays resident: its default shared_buffers (160 MB, set for a dedicated
 * server) is most of the embedded database's idle footprint. A local,
 * single-session database is served from the operating system's page cache
 * anyway. Measured in bench/memory.ts (docs/gateway.md "Memory").
 */
const PGLITE_MEMORY = ["-c", "shared_buffers=16MB"]

/**
 * How long closing waits for pglite-socket to stop. A connection cut while a query was in flight
 * (a SIGTERM during start-up's migrations) can leave its server-side socket half-closed and never
 * read again, and `stop()` then waits for it forever: the server never exited. The database is
 * closed either way; what a commit acknowledged is already on disk.
 */
const SOCKET_STOP_WAIT = "2 seconds"

/**
 * Embedded PGlite under `dir`, served to the same PostgreSQL driver through
 * pglite-socket on a loopback port. PGlite has a single session, so the pool
 * holds exactly one connection: more would interleave concurrent transactions.
 * A new cluster is a copy of `template` (src/db/MigratedTemplate.ts).
 */
export const layerPglite = (dir: string, template: string | (() => string) = newClusterTemplate): SqlLayer =>
  Layer.unwrap(Effect.gen(function*() {
    const absolute = resolve(dir)
    yield* lockDataDir(`${absolute}.lock`).pipe(Effect.mapError((e) => new DatabaseError({ message: e.message })))
    const server = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          mkdirSync(absolute, { recursive: true })
          // Loaded only here: a server on PostgreSQL never holds PGlite's code in memory.
          const [{ PGlite }, { PGLiteSocketServer }] = await Promise.all([
            import("@electric-sql/pglite"),
            import("@electric-sql/pglite-socket")
          ])
          const db = await openPglite((d, options) => PGlite.create(d, options), absolute, {
            startParams: [...PGlite.defaultStartParams, ...PGLITE_MEMORY]
          }, template)
          const socket = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 1 })
          await socket.start()
          return { db, socket }
        },
        catch: (cause) =>
          new DatabaseError({
            message: `cannot open the embedded database at ${absolute} (is another vdb process using it?): ${
              String(cause)
            }`
          })
      }),
      ({ db, socket }) =>
        Effect.promise(() => socket.stop()).pipe(
          Effect.timeout(SOCKET_STOP_WAIT),
          Effect.ignore,
          Effect.andThen(Effect.promise(() => db.close()))
        )
    )
    const [host, port] = server.socket.getServerConn().split(":") as [string, string]
    return PgClient.layer({
      host,
      port: Number(port),
      database: "postgres",
      username: "postgres",
      maxConnections: 1,
      applicationName: "vdb"
    }).pipe(
      countPool,
      sqlFailure("cannot connect to the embedded database"),
      // Only this process can open the directory, so its invalidations never leave it.
      (sql) => Layer.provideMerge(Layer.fresh(Invalidation.layerMemory), sql)
    )
  }))

export const pgliteDir = (dataDir: string) => `${dataDir}/pglite`
