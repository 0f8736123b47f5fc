import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as BatchedWriter from "../db/BatchedWriter.ts"
import { storableText, storableTextOrNull } from "../db/StorableText.ts"
import type { UsageEntry, UsageFilter, UsageSummary } from "./UsageEntry.ts"

export const USAGE_QUEUE_CAPACITY = 10_000
const BATCH = 500
/** Entries gather this long after a batch that was not full (a row costs about a third in a batch). */
const LINGER = "50 millis"

/**
 * The request log. `record` never waits: entries go to a bounded in-process
 * queue and a background fiber writes them in batches (`BatchedWriter`). An
 * entry refused because the queue was full, or by the database even alone, is
 * counted as dropped (logged, and persisted with the next batch, so
 * `vdb usage` reports it). Closing the layer flushes what is queued.
 */
export class UsageLog extends Context.Service<UsageLog, {
  record(entry: UsageEntry): void
  /** Writes everything queued so far (tests, shutdown). */
  readonly flush: Effect.Effect<void>
  /** Entries dropped by this process since start. */
  readonly droppedCount: Effect.Effect<number>
  summary(filter: UsageFilter): Effect.Effect<UsageSummary>
}>()("vdb/usage/UsageLog") {
  static readonly layer = Layer.effect(
    UsageLog,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return yield* makeWriter({
        write: (entries) => {
          // One array per column: the statement text (and its prepared plan) is the same for
          // every batch size, nine parameters instead of nine per row, and half the driver's
          // encoding work. The driver types an array from its elements: an all-null column goes
          // as an empty array (unnest pads it with nulls), latencies as text (ints and floats mix).
          // Client-supplied text is made storable here, so no request can fail a batch.
          const column = <A>(f: (e: UsageEntry) => A) => entries.map(f)
          const nullable = <A>(f: (e: UsageEntry) => A | null) => {
            const values = entries.map(f)
            return values.every((v) => v === null) ? [] : values
          }
          return sql`INSERT INTO usage_log (at, org_uuid, method, route, identifier, status, latency_ms, client_address, user_agent)
          SELECT * FROM unnest(${column((e) => e.at)}::timestamptz[], ${nullable((e) => e.orgUuid)}::uuid[],
            ${column((e) => storableText(e.method))}::text[], ${column((e) => storableText(e.route))}::text[],
            ${nullable((e) => storableTextOrNull(e.identifier))}::text[],
            ${column((e) => e.status)}::int[], ${column((e) => String(e.latencyMs))}::real[],
            ${nullable((e) => storableTextOrNull(e.clientAddress))}::text[], ${
            nullable((e) => storableTextOrNull(e.userAgent))
          }::text[])`
        },
        recordDropped: (dropped) =>
          sql`INSERT INTO usage_dropped (id, dropped) VALUES (1, ${dropped})
          ON CONFLICT (id) DO UPDATE SET dropped = usage_dropped.dropped + EXCLUDED.dropped, updated_at = now()`,
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
    })
  )

  /** Keeps entries in memory (tests): `summary` aggregates them the same way. */
  static readonly layerMemory = Layer.effect(
    UsageLog,
    Effect.gen(function*() {
      const stored: Array<UsageEntry> = []
      let droppedTotal = 0
      return yield* makeWriter({
        write: (entries) => Effect.sync(() => void stored.push(...entries)),
        recordDropped: (dropped) => Effect.sync(() => void (droppedTotal += dropped)),
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
    })
  )
}

const round = (n: number) => Math.round(n * 100) / 100

const makeWriter = Effect.fnUntraced(function*(backend: {
  readonly write: (entries: ReadonlyArray<UsageEntry>) => Effect.Effect<void, unknown>
  readonly recordDropped: (dropped: number) => Effect.Effect<void, unknown>
  readonly summary: (filter: UsageFilter) => Effect.Effect<UsageSummary>
}) {
  const writer = yield* BatchedWriter.make<UsageEntry>({
    name: "usage log",
    capacity: USAGE_QUEUE_CAPACITY,
    batchSize: BATCH,
    linger: LINGER,
    write: backend.write,
    recordDropped: backend.recordDropped
  })
  return UsageLog.of({
    record: (entry) => void writer.offer(entry),
    flush: writer.flush,
    droppedCount: writer.dropped,
    summary: backend.summary
  })
})
