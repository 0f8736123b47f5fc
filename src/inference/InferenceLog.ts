import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Surface } from "../../schema/GatewayRequest.ts"
import * as BatchedWriter from "../db/BatchedWriter.ts"
import { Invalidation } from "../db/Invalidation.ts"
import { storableText } from "../db/StorableText.ts"
import type { Decision } from "./Decision.ts"

/** Metadata of one inference; never prompt or completion text. */
export interface InferenceRecord {
  readonly requestId: string
  readonly orgUuid: string
  readonly provider: string
  readonly surface: Surface
  readonly model: string
  readonly status: number
  readonly latencyMs: number
  readonly requestBytes: number
  readonly responseBytes: number
  readonly decision: Decision
  /** Kiro only: what the side decoder read from the event stream (names and metered usage, never content). */
  readonly stream?: StreamRecord | undefined
}

/** Event-stream metadata of one inference. */
export interface StreamRecord {
  /** Frames per `:event-type`. */
  readonly events: Readonly<Record<string, number>>
  /** Types of exception or error frames. */
  readonly exceptions: ReadonlyArray<string>
  /** Sum of the metering events' usage, in `unit` (Kiro: credits). */
  readonly usage: number | undefined
  readonly unit: string | undefined
  /** Some frame did not decode (decoding stopped there; the relay did not). */
  readonly undecodable: boolean
}

/**
 * The `stream` column's value. Absent is JSON `null` (stored as SQL NULL): the
 * driver cannot type an array of nothing but nulls. jsonb refuses the
 * `\u0000` escape JSON gives a NUL, and the decoder's names come from upstream.
 */
const storableJson = (stream: StreamRecord | undefined): string =>
  stream === undefined ? "null" : JSON.stringify(stream).replaceAll("\\u0000", "\\ufffd")

/** Shared results of `enabled`: the per-request check allocates nothing when the answer is known. */
const ON = Effect.succeed(true)
const OFF = Effect.succeed(false)

const QUEUE_CAPACITY = 10_000
const BATCH = 500
/** Records gather this long after a batch that was not full: fewer, larger statements under load. */
const LINGER = "50 millis"

/** Fallback only: a switch change reaches every process through the invalidation bus at once. */
const SETTING_TTL_MS = 30_000

/**
 * The inference log, for organizations that enabled it. `record` only
 * enqueues into a bounded queue: a background fiber stores batches off the
 * response path (`BatchedWriter`: one bad row never loses the others, lost
 * rows are counted, closing the layer flushes the queue).
 */
export class InferenceLog extends Context.Service<InferenceLog, {
  enabled(orgUuid: string): Effect.Effect<boolean>
  record(entry: InferenceRecord): Effect.Effect<void>
  /** Writes everything queued so far (tests, shutdown). */
  readonly flush: Effect.Effect<void>
  /** Records dropped by this process since start: queue full, or refused by the database. */
  readonly droppedCount: Effect.Effect<number>
  setEnabled(orgUuid: string, enabled: boolean): Effect.Effect<void>
  recent(orgUuid: string, limit: number): Effect.Effect<ReadonlyArray<InferenceRecord>>
}>()("vdb/gateway/InferenceLog") {
  static readonly layerMemory = Layer.sync(InferenceLog)(() => {
    const enabled = new Set<string>()
    const entries: Array<InferenceRecord> = []
    return InferenceLog.of({
      enabled: (orgUuid) => enabled.has(orgUuid) ? ON : OFF,
      record: (entry) => Effect.sync(() => void entries.push(entry)),
      flush: Effect.void,
      droppedCount: Effect.succeed(0),
      setEnabled: (orgUuid, on) => Effect.sync(() => void (on ? enabled.add(orgUuid) : enabled.delete(orgUuid))),
      recent: (orgUuid, limit) =>
        Effect.sync(() => entries.filter((entry) => entry.orgUuid === orgUuid).slice(-limit).reverse())
    })
  })

  /** Logging off for everyone, nothing stored (benchmarks, deployments without the feature). */
  static readonly layerDisabled = Layer.succeed(InferenceLog)(InferenceLog.of({
    enabled: () => OFF,
    record: () => Effect.void,
    flush: Effect.void,
    droppedCount: Effect.succeed(0),
    setEnabled: () => Effect.void,
    recent: () => Effect.succeed([])
  }))

  static readonly layer = Layer.effect(InferenceLog)(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const settings = new Map<string, { readonly enabled: boolean; readonly until: number }>()
    const bus = yield* Invalidation
    yield* bus.subscribe(
      "inference-settings",
      (event) => Effect.sync(() => void (event._tag === "All" ? settings.clear() : settings.delete(event.key)))
    )
    const writer = yield* BatchedWriter.make<InferenceRecord>({
      name: "inference log",
      capacity: QUEUE_CAPACITY,
      batchSize: BATCH,
      linger: LINGER,
      // One array per column: eleven parameters whatever the batch size (PostgreSQL allows 65535).
      // Numbers that may be fractional or exceed int4 go as text, which the casts parse.
      write: (batch) =>
        sql`INSERT INTO gateway_inference_log (request_id, org_uuid, provider, surface, model, status, latency_ms,
            request_bytes, response_bytes, decision, stream)
          SELECT r, o, p, su, m, st, l, rq, rs, d, NULLIF(s, 'null'::jsonb)
          FROM unnest(${batch.map((e) => e.requestId)}::uuid[], ${batch.map((e) => e.orgUuid)}::uuid[],
            ${batch.map((e) => storableText(e.provider))}::text[], ${batch.map((e) => storableText(e.surface))}::text[],
            ${batch.map((e) => storableText(e.model))}::text[], ${batch.map((e) => e.status)}::int[],
            ${batch.map((e) => String(e.latencyMs))}::float8[], ${batch.map((e) => String(e.requestBytes))}::int8[],
            ${batch.map((e) => String(e.responseBytes))}::int8[], ${batch.map((e) => storableText(e.decision))}::text[],
            ${batch.map((e) => storableJson(e.stream))}::jsonb[]) AS t(r, o, p, su, m, st, l, rq, rs, d, s)
          ON CONFLICT (request_id) DO NOTHING`
    })

    const readSetting = Effect.fn("InferenceLog.readSetting")(function*(orgUuid: string) {
      const rows = yield* sql<{ enabled: boolean }>`
        SELECT enabled FROM gateway_inference_settings WHERE org_uuid = ${orgUuid}
      `.pipe(Effect.orDie)
      return rows[0]?.enabled === true
    })

    return InferenceLog.of({
      enabled: (orgUuid) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const cached = bus.live() ? settings.get(orgUuid) : undefined
          if (cached !== undefined && cached.until > now) return cached.enabled ? ON : OFF
          return readSetting(orgUuid).pipe(
            // Logging is not a security check: when the database is unreachable, skip it.
            Effect.catchCause(() => Effect.succeed(false)),
            Effect.tap((enabled) => Effect.sync(() => settings.set(orgUuid, { enabled, until: now + SETTING_TTL_MS })))
          )
        }),
      record: (entry) => Effect.sync(() => void writer.offer(entry)),
      flush: writer.flush,
      droppedCount: writer.dropped,
      setEnabled: Effect.fn("InferenceLog.setEnabled")(function*(orgUuid: string, enabled: boolean) {
        yield* sql`
          INSERT INTO gateway_inference_settings (org_uuid, enabled) VALUES (${orgUuid}, ${enabled})
          ON CONFLICT (org_uuid) DO UPDATE SET enabled = EXCLUDED.enabled, updated_at = now()
        `.pipe(Effect.orDie)
        yield* bus.publish("inference-settings", orgUuid)
      }),
      recent: Effect.fn("InferenceLog.recent")(function*(orgUuid: string, limit: number) {
        const rows = yield* sql<{
          request_id: string
          org_uuid: string
          provider: string
          surface: Surface
          model: string
          status: number
          latency_ms: number
          request_bytes: string | number
          response_bytes: string | number
          decision: Decision
          stream: StreamRecord | null
        }>`
          SELECT request_id, org_uuid, provider, surface, model, status, latency_ms, request_bytes,
                 response_bytes, decision, stream
          FROM gateway_inference_log WHERE org_uuid = ${orgUuid}
          ORDER BY created_at DESC LIMIT ${limit}
        `.pipe(Effect.orDie)
        return rows.map((row) => ({
          requestId: row.request_id,
          orgUuid: row.org_uuid,
          provider: row.provider,
          surface: row.surface,
          model: row.model,
          status: row.status,
          latencyMs: row.latency_ms,
          requestBytes: Number(row.request_bytes),
          responseBytes: Number(row.response_bytes),
          decision: row.decision,
          ...(row.stream === null ? {} : { stream: row.stream })
        }))
      })
    })
  }))
}
