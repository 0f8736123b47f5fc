import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { minuteStart, type RateDecision, weekStart, windowEnd, type WindowState } from "./Windows.ts"

export interface Limits {
  /** 0 = unlimited. */
  readonly perMinute: number
  readonly perWeek: number
}

interface CounterRow {
  readonly minute_count: number
  readonly week_count: number
  readonly last_admitted: boolean
}

const decision = (now: number, limits: Limits, row: { minute: number; week: number; admitted: boolean }): RateDecision => {
  const m = minuteStart(now)
  const w = weekStart(now)
  const minute: WindowState = { kind: "minute", limit: limits.perMinute, used: row.minute, resetAt: windowEnd("minute", m) }
  const week: WindowState = { kind: "week", limit: limits.perWeek, used: row.week, resetAt: windowEnd("week", w) }
  return { admitted: row.admitted, minute, week, now }
}

/**
 * Per-organization request limits over a minute window and an ISO-week window.
 * A request is admitted only when both windows have room, and only admitted
 * requests are counted (so 429s do not eat into the weekly budget).
 */
export class RateLimiter extends Context.Service<RateLimiter, {
  /** Decides and, when admitted, counts one request. */
  consume(orgUuid: string, limits: Limits): Effect.Effect<RateDecision>
  /** The current state without counting (for responses that are not counted, e.g. 403). */
  peek(orgUuid: string, limits: Limits): Effect.Effect<RateDecision>
}>()("vdb/ratelimit/RateLimiter") {
  /**
   * One statement per request: the upsert locks the organization's row, so
   * concurrent requests from any number of processes are serialised and
   * exactly the limit is admitted. Both limits 0: no database work at all.
   */
  static readonly layer = Layer.effect(RateLimiter, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const consume = Effect.fnUntraced(function*(orgUuid: string, limits: Limits) {
      const now = yield* Clock.currentTimeMillis
      if (limits.perMinute === 0 && limits.perWeek === 0) {
        return decision(now, limits, { minute: 0, week: 0, admitted: true })
      }
      const m = new Date(minuteStart(now))
      const w = new Date(weekStart(now))
      const pm = limits.perMinute
      const pw = limits.perWeek
      // A process whose clock lags keeps counting in the newer window (GREATEST / <=).
      const rows = yield* sql<CounterRow>`
        INSERT INTO rate_counters AS r (org_uuid, minute_start, minute_count, week_start, week_count, last_admitted)
        VALUES (${orgUuid}::uuid, ${m}, 1, ${w}, 1, true)
        ON CONFLICT (org_uuid) DO UPDATE SET
          minute_start = GREATEST(r.minute_start, EXCLUDED.minute_start),
          week_start = GREATEST(r.week_start, EXCLUDED.week_start),
          minute_count = (CASE WHEN EXCLUDED.minute_start <= r.minute_start THEN r.minute_count ELSE 0 END)
            + (CASE WHEN (${pm}::int = 0 OR (CASE WHEN EXCLUDED.minute_start <= r.minute_start THEN r.minute_count ELSE 0 END) < ${pm}::int)
                     AND (${pw}::int = 0 OR (CASE WHEN EXCLUDED.week_start <= r.week_start THEN r.week_count ELSE 0 END) < ${pw}::int)
                    THEN 1 ELSE 0 END),
          week_count = (CASE WHEN EXCLUDED.week_start <= r.week_start THEN r.week_count ELSE 0 END)
            + (CASE WHEN (${pm}::int = 0 OR (CASE WHEN EXCLUDED.minute_start <= r.minute_start THEN r.minute_count ELSE 0 END) < ${pm}::int)
                     AND (${pw}::int = 0 OR (CASE WHEN EXCLUDED.week_start <= r.week_start THEN r.week_count ELSE 0 END) < ${pw}::int)
                    THEN 1 ELSE 0 END),
          last_admitted = (${pm}::int = 0 OR (CASE WHEN EXCLUDED.minute_start <= r.minute_start THEN r.minute_count ELSE 0 END) < ${pm}::int)
                     AND (${pw}::int = 0 OR (CASE WHEN EXCLUDED.week_start <= r.week_start THEN r.week_count ELSE 0 END) < ${pw}::int)
        RETURNING minute_count, week_count, last_admitted`.pipe(Effect.orDie)
      const row = rows[0]!
      return decision(now, limits, { minute: row.minute_count, week: row.week_count, admitted: row.last_admitted })
    })

    const peek = Effect.fnUntraced(function*(orgUuid: string, limits: Limits) {
      const now = yield* Clock.currentTimeMillis
      const m = new Date(minuteStart(now))
      const w = new Date(weekStart(now))
      const rows = yield* sql<{ readonly minute: number; readonly week: number }>`
        SELECT CASE WHEN minute_start >= ${m} THEN minute_count ELSE 0 END AS minute,
               CASE WHEN week_start >= ${w} THEN week_count ELSE 0 END AS week
        FROM rate_counters WHERE org_uuid = ${orgUuid}::uuid`.pipe(Effect.orDie)
      const row = rows[0] ?? { minute: 0, week: 0 }
      return decision(now, limits, { minute: row.minute, week: row.week, admitted: true })
    })

    return RateLimiter.of({ consume, peek })
  }))

  static readonly layerMemory = Layer.sync(RateLimiter, () => {
    const counters = new Map<string, { m: number; mc: number; w: number; wc: number }>()
    const current = (orgUuid: string, now: number) => {
      const m = minuteStart(now)
      const w = weekStart(now)
      const c = counters.get(orgUuid) ?? { m, mc: 0, w, wc: 0 }
      if (c.m !== m) Object.assign(c, { m, mc: 0 })
      if (c.w !== w) Object.assign(c, { w, wc: 0 })
      counters.set(orgUuid, c)
      return c
    }
    return RateLimiter.of({
      consume: (orgUuid, limits) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const c = current(orgUuid, now)
          const admitted = (limits.perMinute === 0 || c.mc < limits.perMinute) &&
            (limits.perWeek === 0 || c.wc < limits.perWeek)
          if (admitted) {
            c.mc++
            c.wc++
          }
          return decision(now, limits, { minute: c.mc, week: c.wc, admitted })
        }),
      peek: (orgUuid, limits) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const c = current(orgUuid, now)
          return decision(now, limits, { minute: c.mc, week: c.wc, admitted: true })
        })
    })
  })
}
