import { DateTime, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { GatewayPolicyEntry, type PolicyEffect, type PolicyKind } from "../../schema/GatewayPolicy.ts"

/** A validated entry to store; `provider` is "" for every provider. */
export interface PolicyEntryInput {
  readonly kind: PolicyKind
  readonly effect: PolicyEffect
  readonly provider: string
  readonly value: string
}

export interface StoredPolicies {
  readonly version: number
  readonly entries: ReadonlyArray<GatewayPolicyEntry>
}

/**
 * Where policy entries live. Infrastructure failures are defects here; the
 * service turns them into `BackendUnavailable` on the request path.
 */
export interface PolicyStore {
  read(orgUuid: string): Effect.Effect<StoredPolicies>
  /** Idempotent: the same entry twice is stored once and the existing one is returned. */
  insert(orgUuid: string, input: PolicyEntryInput): Effect.Effect<GatewayPolicyEntry>
  remove(orgUuid: string, uuid: string): Effect.Effect<boolean>
}

interface PolicyRow {
  readonly uuid: string
  readonly org_uuid: string
  readonly kind: PolicyKind
  readonly effect: PolicyEffect
  readonly provider: string
  readonly value: string
  readonly created_at: Date | string
}

const toEntry = (row: PolicyRow) =>
  new GatewayPolicyEntry({
    uuid: row.uuid,
    org_uuid: row.org_uuid,
    kind: row.kind,
    effect: row.effect,
    provider: row.provider === "" ? null : row.provider,
    value: row.value,
    created_at: DateTime.fromDateUnsafe(new Date(row.created_at))
  })

export const sqlPolicyStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  const columns = sql`uuid::text AS uuid, org_uuid::text AS org_uuid, kind, effect, provider, value, created_at`

  // Every write bumps the organization's version in the same transaction.
  const bump = (orgUuid: string) =>
    sql`INSERT INTO gateway_policy_versions (org_uuid, version) VALUES (${orgUuid}::uuid, 1)
      ON CONFLICT (org_uuid) DO UPDATE SET version = gateway_policy_versions.version + 1`

  const read = (orgUuid: string) =>
    Effect.all([
      sql<{ readonly version: string | number }>`
        SELECT version FROM gateway_policy_versions WHERE org_uuid = ${orgUuid}::uuid`,
      sql<PolicyRow>`SELECT ${columns} FROM gateway_policies WHERE org_uuid = ${orgUuid}::uuid
        ORDER BY created_at, uuid`
    ], { concurrency: 1 }).pipe(
      Effect.map(([versions, rows]): StoredPolicies => ({
        version: versions.length === 0 ? 0 : Number(versions[0]!.version),
        entries: rows.map(toEntry)
      })),
      Effect.orDie
    )

  const insert = (orgUuid: string, input: PolicyEntryInput) =>
    sql.withTransaction(Effect.gen(function*() {
      const inserted = yield* sql<PolicyRow>`
        INSERT INTO gateway_policies (uuid, org_uuid, kind, effect, provider, value)
        VALUES (${randomUUID()}::uuid, ${orgUuid}::uuid, ${input.kind}, ${input.effect}, ${input.provider}, ${input.value})
        ON CONFLICT (org_uuid, kind, effect, provider, value) DO NOTHING
        RETURNING ${columns}`
      if (inserted.length > 0) {
        yield* bump(orgUuid)
        return toEntry(inserted[0]!)
      }
      const existing = yield* sql<PolicyRow>`SELECT ${columns} FROM gateway_policies
        WHERE org_uuid = ${orgUuid}::uuid AND kind = ${input.kind} AND effect = ${input.effect}
          AND provider = ${input.provider} AND value = ${input.value}`
      return toEntry(existing[0]!)
    })).pipe(Effect.orDie)

  const remove = (orgUuid: string, uuid: string) =>
    sql.withTransaction(Effect.gen(function*() {
      const removed = yield* sql`DELETE FROM gateway_policies
        WHERE org_uuid = ${orgUuid}::uuid AND uuid = ${uuid}::uuid RETURNING uuid`
      if (removed.length > 0) yield* bump(orgUuid)
      return removed.length > 0
    })).pipe(Effect.orDie)

  return { read, insert, remove } satisfies PolicyStore
})

export const memoryPolicyStore = (): PolicyStore => {
  const byOrg = new Map<string, { version: number; entries: Array<GatewayPolicyEntry> }>()
  const of = (orgUuid: string) => {
    let state = byOrg.get(orgUuid)
    if (state === undefined) byOrg.set(orgUuid, state = { version: 0, entries: [] })
    return state
  }
  return {
    read: (orgUuid) =>
      Effect.sync(() => {
        const state = of(orgUuid)
        return { version: state.version, entries: [...state.entries] }
      }),
    insert: (orgUuid, input) =>
      Effect.sync(() => {
        const state = of(orgUuid)
        const provider = input.provider === "" ? null : input.provider
        const existing = state.entries.find((e) =>
          e.kind === input.kind && e.effect === input.effect && e.provider === provider && e.value === input.value
        )
        if (existing !== undefined) return existing
        const entry = new GatewayPolicyEntry({
          uuid: randomUUID(),
          org_uuid: orgUuid,
          kind: input.kind,
          effect: input.effect,
          provider,
          value: input.value,
          created_at: DateTime.nowUnsafe()
        })
        state.entries.push(entry)
        state.version++
        return entry
      }),
    remove: (orgUuid, uuid) =>
      Effect.sync(() => {
        const state = of(orgUuid)
        const index = state.entries.findIndex((e) => e.uuid === uuid)
        if (index === -1) return false
        state.entries.splice(index, 1)
        state.version++
        return true
      })
  }
}
