import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The authorize call's limiter: 12 calls per 60-second window per client
 * address (src/server/ClientAddress.ts: the TCP peer, or the client a trusted
 * proxy names). The window opens at an address's first call; the 13th and
 * later calls inside it are refused with the seconds until it closes. `layer`
 * keeps the windows in the database, one statement a call, so several
 * processes behind a proxy share them; `layerMemory` is per process (tests).
 */
export const AUTHORIZE_LIMIT = 12
export const AUTHORIZE_WINDOW_MILLIS = 60_000

export class AuthorizeLimiter extends Context.Service<AuthorizeLimiter, {
  /** undefined when admitted; otherwise the `Retry-After` seconds. */
  take(address: string): Effect.Effect<number | undefined>
}>()("vdb/device/AuthorizeLimiter") {
  static readonly layerMemory = Layer.sync(AuthorizeLimiter, () => {
    const windows = new Map<string, { start: number; calls: number }>()
    return AuthorizeLimiter.of({
      take: (address) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          let w = windows.get(address)
          if (w === undefined || now - w.start >= AUTHORIZE_WINDOW_MILLIS) {
            if (windows.size >= 10_000) {
              for (const [key, old] of windows) if (now - old.start >= AUTHORIZE_WINDOW_MILLIS) windows.delete(key)
            }
            w = { start: now, calls: 0 }
            windows.set(address, w)
          }
          if (w.calls >= AUTHORIZE_LIMIT) {
            return Math.max(1, Math.ceil((w.start + AUTHORIZE_WINDOW_MILLIS - now) / 1000))
          }
          w.calls++
          return undefined
        })
    })
  })

  static readonly layer = Layer.effect(
    AuthorizeLimiter,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const decode = Schema.decodeUnknownSync(Schema.Struct({ started: Schema.Number, calls: Schema.Number }))
      let taken = 0
      return AuthorizeLimiter.of({
        take: Effect.fnUntraced(function*(address) {
          const now = yield* Clock.currentTimeMillis
          const expired = new Date(now - AUTHORIZE_WINDOW_MILLIS)
          // Now and then, windows long closed go (a row per address ever seen would only grow).
          if (++taken % 256 === 0) {
            yield* sql`DELETE FROM authorize_windows WHERE window_start <= ${expired}`.pipe(Effect.orDie)
          }
          const rows = yield* sql`
          INSERT INTO authorize_windows AS w (address, window_start, calls) VALUES (${address}, ${new Date(now)}, 1)
          ON CONFLICT (address) DO UPDATE SET
            window_start = CASE WHEN w.window_start <= ${expired} THEN EXCLUDED.window_start ELSE w.window_start END,
            calls = CASE WHEN w.window_start <= ${expired} THEN 1 ELSE LEAST(w.calls + 1, ${
            AUTHORIZE_LIMIT + 1
          }::int) END
          RETURNING (extract(epoch FROM window_start) * 1000)::float8 AS started, calls`.pipe(Effect.orDie)
          const { calls, started } = decode(rows[0])
          if (calls <= AUTHORIZE_LIMIT) return undefined
          return Math.max(1, Math.ceil((started + AUTHORIZE_WINDOW_MILLIS - now) / 1000))
        })
      })
    })
  )
}
