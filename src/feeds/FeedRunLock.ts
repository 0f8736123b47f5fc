import { Context, Effect, Exit, Layer, Option, Scope, Semaphore } from "effect"
import { SqlClient, type SqlConnection } from "effect/sql"
import { DatabaseUrl } from "../config/AppConfig.ts"

/**
 * One run of a source at a time, whoever starts it: the schedule (which
 * ClusterCron already keeps to one process and one run) and `vdb sync` (which
 * any process may serve from its admin socket). In-process by a set of the
 * running sources; across processes on PostgreSQL by a session advisory lock
 * per source, so a process that dies frees it with its connection. The
 * process's locks share one connection, held while any run is going on: a
 * connection per source took four of the pool's ten from the API's readers
 * and the ingestion while a sync ran its sources at once. The embedded
 * database admits one process and has a single connection: the set alone is
 * enough there, and holding its connection would stop the run itself.
 */
export class FeedRunLock extends Context.Service<FeedRunLock, {
  /** Runs `self` if no run of `source` is going on anywhere; `None` if one is. */
  exclusive<A, E, R>(source: string, self: Effect.Effect<A, E, R>): Effect.Effect<Option.Option<A>, E, R>
}>()("vdb/feeds/FeedRunLock") {
  static readonly layer = Layer.effect(
    FeedRunLock,
    Effect.gen(function*() {
      const shared = Option.isSome(yield* Effect.orDie(DatabaseUrl))
      const sql = yield* SqlClient.SqlClient
      const running = new Set<string>()
      const key = (source: string) => `vdb-feed-run:${source}`
      /** The connection holding this process's locks, and how many it holds. */
      let held: { readonly conn: SqlConnection.Connection; readonly scope: Scope.Closeable; locks: number } | undefined
      const turn = yield* Semaphore.make(1)

      const lock = (source: string) =>
        turn.withPermits(1)(Effect.gen(function*() {
          if (held === undefined) {
            const scope = yield* Scope.make()
            const conn = yield* sql.reserve.pipe(Scope.provide(scope), Effect.orDie)
            held = { conn, scope, locks: 0 }
          }
          const h = held
          const rows = yield* h.conn.executeValues(`SELECT pg_try_advisory_lock(hashtext($1))`, [key(source)]).pipe(
            Effect.orDie
          )
          const got = rows[0]?.[0] === true
          if (got) h.locks++
          else if (h.locks === 0) yield* release(h)
          return got
        }))
      const release = (h: NonNullable<typeof held>) =>
        Effect.suspend(() => {
          if (held === h) held = undefined
          return Scope.close(h.scope, Exit.void)
        })
      const unlock = (source: string) =>
        turn.withPermits(1)(Effect.gen(function*() {
          const h = held
          if (h === undefined) return
          yield* h.conn.executeValues(`SELECT pg_advisory_unlock(hashtext($1))`, [key(source)]).pipe(Effect.ignore)
          if (--h.locks === 0) yield* release(h)
        }))

      const acrossProcesses = <A, E, R>(source: string, self: Effect.Effect<A, E, R>) =>
        Effect.acquireUseRelease(
          lock(source),
          (got): Effect.Effect<Option.Option<A>, E, R> =>
            got ? Effect.map(self, Option.some) : Effect.succeed(Option.none<A>()),
          (got) => got ? unlock(source) : Effect.void
        )

      return FeedRunLock.of({
        exclusive: <A, E, R>(source: string, self: Effect.Effect<A, E, R>) =>
          Effect.suspend(() => {
            if (running.has(source)) return Effect.succeed(Option.none<A>())
            running.add(source)
            return (shared ? acrossProcesses(source, self) : Effect.map(self, Option.some)).pipe(
              Effect.ensuring(Effect.sync(() => running.delete(source)))
            )
          })
      })
    })
  )
}
