import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { DatabaseUrl } from "../config/AppConfig.ts"

/**
 * One run of a source at a time, whoever starts it: the schedule (which
 * ClusterCron already keeps to one process and one run) and `vdb sync` (which
 * any process may serve from its admin socket). In-process by a set of the
 * running sources; across processes on PostgreSQL by a session advisory lock
 * per source, on a connection held for the run, so a process that dies frees
 * it with its connection. The embedded database admits one process and has a
 * single connection: the set alone is enough there, and holding its
 * connection would stop the run itself.
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

      const acrossProcesses = <A, E, R>(source: string, self: Effect.Effect<A, E, R>) =>
        Effect.scoped(Effect.gen(function*() {
          const conn = yield* Effect.orDie(sql.reserve)
          const rows = yield* Effect.orDie(
            conn.executeValues(`SELECT pg_try_advisory_lock(hashtext($1))`, [key(source)])
          )
          if (rows[0]?.[0] !== true) return Option.none<A>()
          yield* Effect.addFinalizer(() =>
            conn.executeValues(`SELECT pg_advisory_unlock(hashtext($1))`, [key(source)]).pipe(Effect.ignore)
          )
          return Option.some(yield* self)
        }))

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
