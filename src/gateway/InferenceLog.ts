import { Array as Arr, Clock, Context, Effect, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
import type { Surface } from "../../schema/GatewayRequest.ts"
import type { Decision } from "./pipeline/Verdict.ts"

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
}

/** Shared results of `enabled`: the per-request check allocates nothing when the answer is known. */
const ON = Effect.succeed(true)
const OFF = Effect.succeed(false)

/** How long an organization's on/off switch is trusted before it is read again. */
const SETTING_TTL_MS = 30_000

/**
 * The inference log, for organizations that enabled it. `record` only
 * enqueues: storage happens on a background fiber, off the response path.
 */
export class InferenceLog extends Context.Service<InferenceLog, {
  enabled(orgUuid: string): Effect.Effect<boolean>
  record(entry: InferenceRecord): Effect.Effect<void>
  setEnabled(orgUuid: string, enabled: boolean): Effect.Effect<void>
  recent(orgUuid: string, limit: number): Effect.Effect<ReadonlyArray<InferenceRecord>>
}>()("vdb/gateway/InferenceLog") {
  static readonly layerMemory = Layer.sync(InferenceLog)(() => {
    const enabled = new Set<string>()
    const entries: Array<InferenceRecord> = []
    return InferenceLog.of({
      enabled: (orgUuid) => enabled.has(orgUuid) ? ON : OFF,
      record: (entry) => Effect.sync(() => void entries.push(entry)),
      setEnabled: (orgUuid, on) => Effect.sync(() => void (on ? enabled.add(orgUuid) : enabled.delete(orgUuid))),
      recent: (orgUuid, limit) =>
        Effect.sync(() => entries.filter((entry) => entry.orgUuid === orgUuid).slice(-limit).reverse())
    })
  })

  /** Logging off for everyone, nothing stored (benchmarks, deployments without the feature). */
  static readonly layerDisabled = Layer.succeed(InferenceLog)(InferenceLog.of({
    enabled: () => OFF,
    record: () => Effect.void,
    setEnabled: () => Effect.void,
    recent: () => Effect.succeed([])
  }))

  static readonly layer = Layer.effect(InferenceLog)(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const settings = new Map<string, { readonly enabled: boolean; readonly until: number }>()
    const queue = yield* Queue.unbounded<InferenceRecord>()

    const write = (batch: Arr.NonEmptyReadonlyArray<InferenceRecord>) =>
      sql`INSERT INTO gateway_inference_log ${
        sql.insert(Arr.map(batch, (entry) => ({
          request_id: entry.requestId,
          org_uuid: entry.orgUuid,
          provider: entry.provider,
          surface: entry.surface,
          model: entry.model,
          status: entry.status,
          latency_ms: entry.latencyMs,
          request_bytes: entry.requestBytes,
          response_bytes: entry.responseBytes,
          decision: entry.decision
        })))
      } ON CONFLICT (request_id) DO NOTHING`.pipe(
        // A lost log line must never take the gateway down.
        Effect.catchCause((cause) => Effect.logWarning("inference log write failed", cause))
      )
    yield* Queue.takeAll(queue).pipe(Effect.flatMap(write), Effect.forever, Effect.forkScoped)

    const readSetting = Effect.fn("InferenceLog.readSetting")(function*(orgUuid: string) {
      const rows = yield* sql<{ enabled: boolean }>`
        SELECT enabled FROM gateway_inference_settings WHERE org_uuid = ${orgUuid}
      `.pipe(Effect.orDie)
      return rows[0]?.enabled === true
    })

    return InferenceLog.of({
      enabled: (orgUuid) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const cached = settings.get(orgUuid)
          if (cached !== undefined && cached.until > now) return cached.enabled ? ON : OFF
          return readSetting(orgUuid).pipe(
            // Logging is not a security check: when the database is unreachable, skip it.
            Effect.catchCause(() => Effect.succeed(false)),
            Effect.tap((enabled) => Effect.sync(() => settings.set(orgUuid, { enabled, until: now + SETTING_TTL_MS })))
          )
        }),
      record: (entry) => Effect.sync(() => void Queue.offerUnsafe(queue, entry)),
      setEnabled: Effect.fn("InferenceLog.setEnabled")(function*(orgUuid: string, enabled: boolean) {
        yield* sql`
          INSERT INTO gateway_inference_settings (org_uuid, enabled) VALUES (${orgUuid}, ${enabled})
          ON CONFLICT (org_uuid) DO UPDATE SET enabled = EXCLUDED.enabled, updated_at = now()
        `.pipe(Effect.orDie)
        settings.delete(orgUuid)
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
        }>`
          SELECT request_id, org_uuid, provider, surface, model, status, latency_ms, request_bytes,
                 response_bytes, decision
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
          decision: row.decision
        }))
      })
    })
  }))
}
