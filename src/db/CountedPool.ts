import { PgClient, type PgConnection } from "@effect/sql-pg"
import { Context, Effect, Exit, Layer, Metric, Scope } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient, type SqlConnection, SqlError } from "effect/sql"

/**
 * `@effect/sql-pg` (4.0.5) builds its pool inside `PgClient.make` and keeps it (and effect's
 * `Pool.stats`) to itself, so the pool cannot be read. Instead every lease of a connection is
 * counted where it is taken: the services' `SqlClient` is a client of our own over the
 * `PgClient`'s `reserve` (an exclusive checkout from the same pool), and only `PgClient.PgClient`
 * itself (the invalidation bus's NOTIFY) goes around it. Per statement this costs two integer
 * updates and a finalizer; the gauges are read only when scraped.
 */
export interface PoolCounts {
  /** Connections checked out: statements running, transactions and streams holding one. */
  inUse: number
  /** Leases asked for and not yet granted: the pool is full, or a connection is being opened. */
  waiting: number
}

const gauge = (name: string, description: string, attributes?: Record<string, string>) =>
  Metric.gauge(name, { description, ...(attributes === undefined ? {} : { attributes }) })

const IN_USE = gauge("vdb_db_pool_connections", "Database pool connections by state", { state: "in_use" })
const WAITING = gauge("vdb_db_pool_waiting", "Database statements waiting for a pool connection")

/**
 * A lease that counts: waiting from the ask to the grant (or failure, or interruption), then in
 * use until the lease's scope closes. The release is registered before the wait so no exit can
 * skip it, and it runs after the pool's own (finalizers run in reverse), once the connection is
 * back.
 */
const counted = (
  acquire: Effect.Effect<SqlConnection.Connection, SqlError.SqlError, Scope.Scope>,
  counts: PoolCounts
): Effect.Effect<SqlConnection.Connection, SqlError.SqlError, Scope.Scope> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.scope, (scope) => {
      let held = false
      counts.waiting++
      return Effect.andThen(
        Scope.addFinalizer(
          scope,
          Effect.sync(() => {
            if (held) counts.inUse--
          })
        ),
        Effect.onExit(restore(acquire), (exit) =>
          Effect.sync(() => {
            counts.waiting--
            if (Exit.isSuccess(exit)) {
              held = true
              counts.inUse++
            }
          }))
      )
    })
  )

/**
 * PostgreSQL answers `COMMIT` with `ROLLBACK` when the transaction had already failed (a statement
 * error the effect caught): that transaction did not commit, so it must not succeed. The
 * `PgClient`'s own client checks this; ours has to as well.
 */
const commit = (connection: SqlConnection.Connection) =>
  Effect.flatMap(connection.executeRaw("COMMIT", []), (result) =>
    (result as PgConnection.Result).command === "ROLLBACK"
      ? Effect.fail(
        new SqlError.SqlError({
          reason: new SqlError.UnknownError({
            cause: new Error("COMMIT rolled back an aborted transaction"),
            message: "COMMIT rolled back an aborted transaction",
            operation: "commit"
          })
        })
      )
      : Effect.void)

/** The statement spans' attributes, as the `PgClient`'s own client sets them (span name included). */
const spanAttributes = (config: PgClient.PgClientConfig): ReadonlyArray<readonly [string, unknown]> => [
  ...(config.spanAttributes ? Object.entries(config.spanAttributes) : []),
  ["db.system.name", "postgresql"],
  ["db.namespace", config.database ?? config.username ?? "postgres"],
  ["server.address", config.host ?? "localhost"],
  ["server.port", config.port ?? 5432]
]

/** A `SqlClient` over `pg`'s pool whose every lease is counted in `counts`. */
export const makeCountedClient = (pg: PgClient.PgClient, counts: PoolCounts) =>
  SqlClient.make({
    acquirer: counted(pg.reserve, counts),
    transactionAcquirer: counted(pg.reserve, counts),
    compiler: PgClient.makeCompiler(pg.config.transformQueryNames, pg.config.transformJson),
    driver: "pg",
    spanAttributes: spanAttributes(pg.config),
    prepareTransactionControls: true,
    commit,
    releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`
  })

/**
 * Replaces the `SqlClient` of a `PgClient` layer with the counted one, and registers the pool
 * gauges for as long as the layer lives. `PgClient.PgClient` stays the library's own (LISTEN,
 * NOTIFY, its configuration).
 */
export const countPool = <E, R>(
  layer: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, E, R>
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, E, R> =>
  Layer.effectContext(Effect.gen(function*() {
    const pg = yield* PgClient.PgClient
    const counts: PoolCounts = { inUse: 0, waiting: 0 }
    const client = yield* makeCountedClient(pg, counts)
    const context = yield* Effect.context<never>()
    const registrations = [
      Metric.registerUnsafe(IN_USE, context, {
        get: () => ({ value: counts.inUse }),
        update: () => {},
        modify: () => {}
      }),
      Metric.registerUnsafe(WAITING, context, {
        get: () => ({ value: counts.waiting }),
        update: () => {},
        modify: () => {}
      })
    ]
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const registration of registrations) registration.remove()
      })
    )
    return Context.make(PgClient.PgClient, pg).pipe(Context.add(SqlClient.SqlClient, client))
  })).pipe(Layer.provide(Reactivity.layer), Layer.provide(layer))
