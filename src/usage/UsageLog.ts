import { Context, Effect, Layer, Queue, Semaphore } from "effect"
import { SqlClient } from "effect/sql"
import type { UsageEntry, UsageFilter, UsageSummary } from "./UsageEntry.ts"

export const USAGE_QUEUE_CAPACITY = 10_000
const BATCH = 500
/**
 * After a batch that was not full, the writer lets entries gather this long before
 * taking the next one: under load a batch then holds tens to hundreds of entries (a
 * row costs the database about a third of what it costs in a batch of ten), and a
 * full batch is followed at once, so the writer's throughput has no cap.
 */
const LINGER = "50 millis"

/**
 * The request log. `record` never waits: entries go to a bounded in-process
 * queue and a background fiber writes them in batches; when the queue is full
 * the entry is counted as dropped (logged, and persisted with the next batch,
 * so `vdb usage` reports it). Closing the layer flushes what is queued.
 */
export class UsageLog extends Context.Service<UsageLog, {
  record(entry: UsageEntry): void
  /** Writes everything queued so far (tests, shutdown). */
  readonly flush: Effect.Effect<void>
  /** Entries dropped by this process since start. */
  readonly droppedCount: Effect.Effect<number>
  summary(filter: UsageFilter): Effect.Effect<UsageSummary>
}>()("vdb/usage/UsageLog") {
  static readonly layer = Layer.effect(UsageLog, Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* makeWriter({
      write: (entries, dropped) =>
        Effect.gen(function*() {
          if (entries.length > 0) {
            // One array per column: the statement text (and its prepared plan) is the same for
            // every batch size, nine parameters instead of nine per row, and half the driver's
            // encoding work. The driver types an array from its elements: an all-null column goes
            // as an empty array (unnest pads it with nulls), latencies as text (ints and floats mix).
            const column = <A>(f: (e: UsageEntry) => A) => entries.map(f)
            const nullable = <A>(f: (e: UsageEntry) => A | null) => {
              const values = entries.map(f)
              return values.every((v) => v === null) ? [] : values
            }
            yield* sql`INSERT INTO usage_log (at, org_uuid, method, route, identifier, status, latency_ms, client_address, user_agent)
              SELECT * FROM unnest(${column((e) => e.at)}::timestamptz[], ${nullable((e) => e.orgUuid)}::uuid[],
                ${column((e) => e.method)}::text[], ${column((e) => e.route)}::text[], ${nullable((e) => e.identifier)}::text[],
                ${column((e) => e.status)}::int[], ${column((e) => String(e.latencyMs))}::real[],
                ${nullable((e) => e.clientAddress)}::text[], ${nullable((e) => e.userAgent)}::text[])`
          }
          if (dropped > 0) {
            yield* sql`INSERT INTO usage_dropped (id, dropped) VALUES (1, ${dropped})
              ON CONFLICT (id) DO UPDATE SET dropped = usage_dropped.dropped + EXCLUDED.dropped, updated_at = now()`
          }
        }).pipe(Effect.orDie),
      summary: Effect.fn("UsageLog.summary")(function*(filter: UsageFilter) {
        const org = filter.orgUuid === undefined ? sql`TRUE` : sql`org_uuid = ${filter.orgUuid}::uuid`
        const since = filter.since === undefined ? sql`TRUE` : sql`at >= ${filter.since}`
        const rows = yield* sql<{
          org_uuid: string | null
          route: string
          requests: string | number
          errors: string | number
          rate_limited: string | number
          avg_latency: number
          p99_latency: number
          last_at: Date
        }>`SELECT org_uuid::text AS org_uuid, route, count(*) AS requests,
              count(*) FILTER (WHERE status >= 400) AS errors,
              count(*) FILTER (WHERE status = 429) AS rate_limited,
              avg(latency_ms)::float8 AS avg_latency,
              percentile_cont(0.99) WITHIN GROUP (ORDER BY latency_ms)::float8 AS p99_latency,
              max(at) AS last_at
            FROM usage_log WHERE ${org} AND ${since}
            GROUP BY org_uuid, route ORDER BY org_uuid NULLS LAST, route`.pipe(Effect.orDie)
        const dropped = yield* sql<{ dropped: string | number }>`SELECT dropped FROM usage_dropped WHERE id = 1`
          .pipe(Effect.orDie)
        return {
          rows: rows.map((r) => ({
            orgUuid: r.org_uuid,
            route: r.route,
            requests: Number(r.requests),
            errors: Number(r.errors),
            rateLimited: Number(r.rate_limited),
            avgLatencyMs: round(r.avg_latency),
            p99LatencyMs: round(r.p99_latency),
            lastAt: new Date(r.last_at).toISOString()
          })),
          dropped: Number(dropped[0]?.dropped ?? 0)
        }
      })
    })
  }))

  /** Keeps entries in memory (tests): `summary` aggregates them the same way. */
  static readonly layerMemory = Layer.effect(UsageLog, Effect.gen(function*() {
    const stored: Array<UsageEntry> = []
    let droppedTotal = 0
    return yield* makeWriter({
      write: (entries, dropped) =>
        Effect.sync(() => {
          stored.push(...entries)
          droppedTotal += dropped
        }),
      summary: (filter) =>
        Effect.sync(() => {
          const groups = new Map<string, Array<UsageEntry>>()
          for (const e of stored) {
            if (filter.orgUuid !== undefined && e.orgUuid !== filter.orgUuid) continue
            if (filter.since !== undefined && e.at < filter.since) continue
            const key = `${e.orgUuid ?? ""}\u0000${e.route}`
            groups.set(key, [...(groups.get(key) ?? []), e])
          }
          const rows = [...groups.values()].map((list) => {
            const latencies = list.map((e) => e.latencyMs).sort((a, b) => a - b)
            return {
              orgUuid: list[0]!.orgUuid,
              route: list[0]!.route,
              requests: list.length,
              errors: list.filter((e) => e.status >= 400).length,
              rateLimited: list.filter((e) => e.status === 429).length,
              avgLatencyMs: round(latencies.reduce((a, b) => a + b, 0) / latencies.length),
              p99LatencyMs: round(latencies[Math.min(latencies.length - 1, Math.ceil(latencies.length * 0.99) - 1)]!),
              lastAt: new Date(Math.max(...list.map((e) => e.at.getTime()))).toISOString()
            }
          })
          return { rows, dropped: droppedTotal }
        })
    })
  }))
}

const round = (n: number) => Math.round(n * 100) / 100

const makeWriter = Effect.fnUntraced(function*(backend: {
  readonly write: (entries: ReadonlyArray<UsageEntry>, dropped: number) => Effect.Effect<void>
  readonly summary: (filter: UsageFilter) => Effect.Effect<UsageSummary>
}) {
  const queue = yield* Queue.bounded<UsageEntry>(USAGE_QUEUE_CAPACITY)
  let droppedSinceStart = 0
  let droppedUnwritten = 0

  const lock = yield* Semaphore.make(1)

  const writeBatch = (entries: ReadonlyArray<UsageEntry>) =>
    Effect.suspend(() => {
      const dropped = droppedUnwritten
      droppedUnwritten = 0
      return Effect.andThen(
        dropped > 0
          ? Effect.logWarning("usage log queue full: entries dropped", { dropped, droppedSinceStart })
          : Effect.void,
        backend.write(entries, dropped)
      )
    }).pipe(
      Effect.catchCause((cause) =>
        Effect.logError("usage log: batch write failed; entries lost", { count: entries.length, cause })
      ),
      lock.withPermits(1)
    )

  // A batch taken is always written, even when the scope closes meanwhile.
  let full = false
  yield* Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(
      restore(full ? Queue.takeBetween(queue, 1, BATCH) : Effect.andThen(Effect.sleep(LINGER), Queue.takeBetween(queue, 1, BATCH))),
      (entries) => {
        full = entries.length === BATCH
        return writeBatch(entries)
      }
    )
  ).pipe(Effect.forever, Effect.forkScoped)

  // Also waits for a batch the writer fiber is writing (the lock).
  const flush = Effect.flatMap(Queue.clear(queue), writeBatch)

  yield* Effect.addFinalizer(() => flush)

  return UsageLog.of({
    record: (entry) => {
      if (!Queue.offerUnsafe(queue, entry)) {
        droppedSinceStart++
        droppedUnwritten++
      }
    },
    flush,
    droppedCount: Effect.sync(() => droppedSinceStart),
    summary: backend.summary
  })
})
