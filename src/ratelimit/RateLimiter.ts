import { Cause, Clock, Context, Deferred, Effect, Layer } from "effect"
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
  readonly last_admitted_count: number
}

const decision = (
  now: number,
  limits: Limits,
  row: { minute: number; week: number; admitted: boolean }
): RateDecision => {
  const m = minuteStart(now)
  const w = weekStart(now)
  const minute: WindowState = {
    kind: "minute",
    limit: limits.perMinute,
    used: row.minute,
    resetAt: windowEnd("minute", m)
  }
  const week: WindowState = { kind: "week", limit: limits.perWeek, used: row.week, resetAt: windowEnd("week", w) }
  return { admitted: row.admitted, minute, week, now }
}

/** Requests of one organization one statement decides at most. */
const MAX_GROUP = 1000

interface Waiter {
  readonly limits: Limits
  readonly deferred: Deferred.Deferred<RateDecision>
  taken: boolean
}

const sameLimits = (a: Limits, b: Limits) => a.perMinute === b.perMinute && a.perWeek === b.perWeek

/**
 * The answers of a group of `size` requests that one statement decided: as if they had been
 * counted one after the other in arrival order. The first `admitted` are admitted, each seeing
 * the count with itself included; the rest are refused and see the full count.
 */
const groupDecisions = (now: number, limits: Limits, size: number, row: CounterRow): Array<RateDecision> =>
  Array.from({ length: size }, (_, i) =>
    i < row.last_admitted_count
      ? decision(now, limits, {
        minute: row.minute_count - row.last_admitted_count + i + 1,
        week: row.week_count - row.last_admitted_count + i + 1,
        admitted: true
      })
      : decision(now, limits, { minute: row.minute_count, week: row.week_count, admitted: false }))

/**
 * Per-organization request limits over a minute window and an ISO-week window.
 * A request is admitted only when both windows have room, and only admitted
 * requests are counted (so 429s do not eat into the weekly budget).
 */
export class RateLimiter extends Context.Service<RateLimiter, {
  /**
   * Decides and, when admitted, counts `cost` requests (default 1), all or nothing: they are
   * admitted only when both windows have room for all of them.
   */
  consume(orgUuid: string, limits: Limits, cost?: number): Effect.Effect<RateDecision>
  /** The current state without counting (for responses that are not counted, e.g. 403). */
  peek(orgUuid: string, limits: Limits): Effect.Effect<RateDecision>
}>()("vdb/ratelimit/RateLimiter") {
  /**
   * One atomic statement decides and counts, so the count is exact across any
   * number of processes: the upsert locks the organization's row. Within a
   * process, the requests of one organization that arrive while its statement
   * is running wait and are decided together by the next one, which admits as
   * many of them as both windows have room for. One request per statement
   * made concurrent requests queue on the row's lock in PostgreSQL: at 32
   * concurrent requests of one organization, PostgreSQL spent 0.2 to 0.8 ms of
   * CPU a request waking waiters that found the row changed again (docs/api.md,
   * "Rate limits under load"). Both limits 0: no database work at all.
   */
  static readonly layer = Layer.effect(
    RateLimiter,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const scope = yield* Effect.scope
      const queues = new Map<string, Array<Waiter>>()

      // The windows' counts as of now (a window that has ended counts 0). A process whose clock lags
      // keeps counting in the newer window (GREATEST / <=).
      const minuteNow = sql`(CASE WHEN EXCLUDED.minute_start <= r.minute_start THEN r.minute_count ELSE 0 END)`
      const weekNow = sql`(CASE WHEN EXCLUDED.week_start <= r.week_start THEN r.week_count ELSE 0 END)`

      /**
       * Counts `admitted` (an expression over `minuteNow`/`weekNow`) atomically; `first` is the same
       * count for an organization that has no row yet. The row after it, with how many it admitted.
       */
      const count = (orgUuid: string, now: number, first: number, admitted: typeof minuteNow) =>
        sql<CounterRow>`
        INSERT INTO rate_counters AS r (org_uuid, minute_start, minute_count, week_start, week_count, last_admitted, last_admitted_count)
        VALUES (${orgUuid}::uuid, ${new Date(minuteStart(now))}, ${first}::int, ${new Date(
          weekStart(now)
        )}, ${first}::int, ${first > 0}, ${first}::int)
        ON CONFLICT (org_uuid) DO UPDATE SET
          minute_start = GREATEST(r.minute_start, EXCLUDED.minute_start),
          week_start = GREATEST(r.week_start, EXCLUDED.week_start),
          minute_count = ${minuteNow} + ${admitted},
          week_count = ${weekNow} + ${admitted},
          last_admitted_count = ${admitted},
          last_admitted = ${admitted} > 0
        RETURNING minute_count, week_count, last_admitted_count`.pipe(Effect.map((rows) => rows[0]!))

      /** Admits up to `size` requests atomically: as many as both windows have room for. */
      const admitGroup = (orgUuid: string, limits: Limits, size: number, now: number) => {
        const pm = limits.perMinute
        const pw = limits.perWeek
        const first = Math.min(size, pm === 0 ? size : pm, pw === 0 ? size : pw)
        return count(
          orgUuid,
          now,
          first,
          sql`LEAST(${size}::int,
        CASE WHEN ${pm}::int = 0 THEN ${size}::int ELSE GREATEST(0, ${pm}::int - ${minuteNow}) END,
        CASE WHEN ${pw}::int = 0 THEN ${size}::int ELSE GREATEST(0, ${pw}::int - ${weekNow}) END)`
        )
      }

      /**
       * Admits all `cost` requests or none, atomically. Not grouped with the single requests: a group
       * admits a prefix of its waiters, and a batch cannot be split.
       */
      const admitAll = (orgUuid: string, limits: Limits, cost: number, now: number) => {
        const pm = limits.perMinute
        const pw = limits.perWeek
        const first = (pm === 0 || cost <= pm) && (pw === 0 || cost <= pw) ? cost : 0
        return count(
          orgUuid,
          now,
          first,
          sql`(CASE WHEN (${pm}::int = 0 OR ${minuteNow} + ${cost}::int <= ${pm}::int)
        AND (${pw}::int = 0 OR ${weekNow} + ${cost}::int <= ${pw}::int) THEN ${cost}::int ELSE 0 END)`
        )
      }

      /**
       * Decides the organization's waiting requests, a group per statement, until none is left. The
       * queue is dropped in the same step that finds it empty, so a request that arrives later
       * starts a new run and is never left waiting.
       */
      const drain = (orgUuid: string, waiting: Array<Waiter>) =>
        Effect.gen(function*() {
          while (waiting.length > 0) {
            const limits = waiting[0]!.limits
            let size = 1
            while (size < waiting.length && size < MAX_GROUP && sameLimits(waiting[size]!.limits, limits)) size++
            const group = waiting.splice(0, size)
            for (const waiter of group) waiter.taken = true
            const now = yield* Clock.currentTimeMillis
            const exit = yield* Effect.exit(admitGroup(orgUuid, limits, group.length, now))
            if (exit._tag === "Failure") {
              const failed = Effect.die(Cause.squash(exit.cause))
              for (const waiter of group) Deferred.doneUnsafe(waiter.deferred, failed)
              continue
            }
            const decisions = groupDecisions(now, limits, group.length, exit.value)
            group.forEach((waiter, i) => Deferred.doneUnsafe(waiter.deferred, Effect.succeed(decisions[i]!)))
          }
          queues.delete(orgUuid)
        })

      const consume = (orgUuid: string, limits: Limits, cost = 1): Effect.Effect<RateDecision> =>
        Effect.suspend(() => {
          if (limits.perMinute === 0 && limits.perWeek === 0) {
            return Effect.map(
              Clock.currentTimeMillis,
              (now) => decision(now, limits, { minute: 0, week: 0, admitted: true })
            )
          }
          if (cost > 1) {
            return Effect.flatMap(Clock.currentTimeMillis, (now) =>
              admitAll(orgUuid, limits, cost, now).pipe(
                Effect.map((row) =>
                  decision(now, limits, {
                    minute: row.minute_count,
                    week: row.week_count,
                    admitted: row.last_admitted_count > 0
                  })
                ),
                Effect.orDie
              ))
          }
          const waiter: Waiter = { limits, deferred: Deferred.makeUnsafe<RateDecision>(), taken: false }
          let waiting = queues.get(orgUuid)
          const start = waiting === undefined
          if (waiting === undefined) queues.set(orgUuid, waiting = [])
          waiting.push(waiter)
          const awaited = Deferred.await(waiter.deferred).pipe(
            // A request that goes away before its group is taken is not counted.
            Effect.onInterrupt(() =>
              Effect.sync(() => {
                if (waiter.taken) return
                const at = waiting.indexOf(waiter)
                if (at !== -1) waiting.splice(at, 1)
              })
            )
          )
          return start ? Effect.andThen(Effect.forkIn(drain(orgUuid, waiting), scope), awaited) : awaited
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
    })
  )

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
      consume: (orgUuid, limits, cost = 1) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const c = current(orgUuid, now)
          const admitted = (limits.perMinute === 0 || c.mc + cost <= limits.perMinute) &&
            (limits.perWeek === 0 || c.wc + cost <= limits.perWeek)
          if (admitted) {
            c.mc += cost
            c.wc += cost
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
