import { Clock, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"

/** An open window: when it started (epoch milliseconds) and the failures counted in it. */
export interface FailureWindow {
  readonly start: number
  readonly failures: number
}

const decodeRows = Schema.decodeUnknownSync(Schema.Array(Schema.Struct({
  key: Schema.String,
  started: Schema.Number,
  failures: Schema.Number
})))

/** Seconds until `window` closes when it holds `limit` failures or more; 0 when an attempt may be made. */
export const waitOf = (window: FailureWindow | undefined, limit: number, windowMillis: number, now: number) =>
  window !== undefined && window.failures >= limit
    ? Math.max(1, Math.ceil((window.start + windowMillis - now) / 1000))
    : 0

/**
 * Failures counted per key in a fixed window that opens at a key's first failure, kept in the
 * database (table `failure_windows`), so that every process counts the same ones: the
 * throttles built on it hold across processes behind a proxy as within one. A count stops at
 * `cap` (the highest limit of the keys counted), past which nothing more is learned. Keys carry
 * their kind as a prefix (`a:` an account, `i:` an address, `m:` a member); one table holds all.
 */
export const makeFailureWindows = (windowMillis: number, cap: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    let counted = 0

    /** The open windows of `keys` (a key without one is absent). */
    const open = Effect.fnUntraced(function*(keys: ReadonlyArray<string>) {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql`
        SELECT key, (extract(epoch FROM window_start) * 1000)::float8 AS started, failures FROM failure_windows
        WHERE key IN ${sql.in(keys)} AND window_start > ${new Date(now - windowMillis)}`.pipe(Effect.orDie)
      const windows = new Map<string, FailureWindow>()
      for (const row of decodeRows(rows)) windows.set(row.key, { start: row.started, failures: row.failures })
      return { now, windows }
    })

    /** Counts a failure for each of `keys`, in its open window or in one opening now. */
    const failed = Effect.fnUntraced(function*(keys: ReadonlyArray<string>) {
      const now = yield* Clock.currentTimeMillis
      const closed = new Date(now - windowMillis)
      // Now and then, windows long closed go (a row per key ever seen would only grow).
      if (++counted % 256 === 0) {
        yield* sql`DELETE FROM failure_windows WHERE window_start <= ${closed}`.pipe(Effect.orDie)
      }
      for (const key of keys) {
        yield* sql`
          INSERT INTO failure_windows AS w (key, window_start, failures) VALUES (${key}, ${new Date(now)}, 1)
          ON CONFLICT (key) DO UPDATE SET
            window_start = CASE WHEN w.window_start <= ${closed} THEN EXCLUDED.window_start ELSE w.window_start END,
            failures = CASE WHEN w.window_start <= ${closed} THEN 1 ELSE LEAST(w.failures + 1, ${cap}::int) END`.pipe(
          Effect.orDie
        )
      }
    })

    const clear = (key: string) => sql`DELETE FROM failure_windows WHERE key = ${key}`.pipe(Effect.orDie, Effect.asVoid)

    /** Rows whose key starts with one of `prefixes`, open or not yet swept (tests: what requests leave behind). */
    const size = (prefixes: ReadonlyArray<string>) =>
      sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM failure_windows
        WHERE left(key, 2) IN ${sql.in(prefixes)}`.pipe(Effect.orDie, Effect.map((rows) => rows[0]?.n ?? 0))

    return { open, failed, clear, size }
  })
