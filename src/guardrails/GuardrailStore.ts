import { Effect, Semaphore } from "effect"
import { SqlClient } from "effect/sql"
import type { StoredRule } from "./CompiledRules.ts"
import { evaluationOrder } from "./CompiledRules.ts"

/**
 * Where guardrail rules live. Every change bumps the organization's rule-set
 * version (in SQL a trigger does it, so direct writes count too), so a process
 * holding a compiled rule set learns whether it is current with one small read. Infrastructure failures
 * are defects here; the engine turns them into `GuardrailsUnavailable`.
 */
export interface GuardrailStore {
  /** The organization's rules in evaluation order. */
  list(orgUuid: string): Effect.Effect<ReadonlyArray<StoredRule>>
  find(orgUuid: string, uuid: string): Effect.Effect<StoredRule | undefined>
  insert(rule: StoredRule): Effect.Effect<void>
  /** False when the rule is gone (removed by a request that ran first). */
  update(rule: StoredRule): Effect.Effect<boolean>
  remove(orgUuid: string, uuid: string): Effect.Effect<boolean>
  /** "0" for an organization that never had a rule. */
  version(orgUuid: string): Effect.Effect<string>
  /**
   * Runs `effect` as the only rule write of the organization at that moment, in every process: a
   * transaction holding a per-organization lock. The count, name and budget checks of a create
   * or an update read the rules and then write; two of them side by side each saw the other's
   * rule missing, so together they passed the 200-rule cap, and two of one name ended in the
   * unique constraint's error (a 500) instead of the named 400.
   */
  exclusive<A, E>(orgUuid: string, effect: Effect.Effect<A, E>): Effect.Effect<A, E>
}

interface RuleRow {
  readonly uuid: string
  readonly org_uuid: string
  readonly name: string
  readonly rule_type: StoredRule["rule_type"]
  readonly action: StoredRule["action"]
  readonly priority: number
  readonly enabled: boolean
  readonly pattern: string | null
  readonly created_at: Date | string
  readonly updated_at: Date | string
}

const toStored = (row: RuleRow): StoredRule => ({
  ...row,
  priority: Number(row.priority),
  created_at: new Date(row.created_at),
  updated_at: new Date(row.updated_at)
})

export const sqlGuardrailStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  const columns = sql`uuid::text AS uuid, org_uuid::text AS org_uuid, name, rule_type, action, priority, enabled,
    pattern, created_at, updated_at`

  const list = (orgUuid: string) =>
    sql<RuleRow>`SELECT ${columns} FROM guardrail_rules WHERE org_uuid = ${orgUuid}::uuid
      ORDER BY priority, created_at, uuid`.pipe(
      Effect.map((rows) => rows.map(toStored).sort(evaluationOrder)),
      Effect.orDie
    )

  const find = (orgUuid: string, uuid: string) =>
    sql<RuleRow>`SELECT ${columns} FROM guardrail_rules WHERE org_uuid = ${orgUuid}::uuid AND uuid = ${uuid}::uuid`
      .pipe(Effect.map((rows) => rows.length === 0 ? undefined : toStored(rows[0]!)), Effect.orDie)

  const insert = (rule: StoredRule) =>
    sql`INSERT INTO guardrail_rules (uuid, org_uuid, name, rule_type, action, priority, enabled, pattern,
          created_at, updated_at)
        VALUES (${rule.uuid}::uuid, ${rule.org_uuid}::uuid, ${rule.name}, ${rule.rule_type}, ${rule.action},
          ${rule.priority}, ${rule.enabled}, ${rule.pattern}, ${rule.created_at}, ${rule.updated_at})`
      .pipe(Effect.asVoid, Effect.orDie)

  const update = (rule: StoredRule) =>
    sql`UPDATE guardrail_rules SET name = ${rule.name}, action = ${rule.action}, priority = ${rule.priority},
          enabled = ${rule.enabled}, pattern = ${rule.pattern}, updated_at = ${rule.updated_at}
        WHERE org_uuid = ${rule.org_uuid}::uuid AND uuid = ${rule.uuid}::uuid RETURNING uuid`.pipe(
      Effect.map((rows) => rows.length > 0),
      Effect.orDie
    )

  const remove = (orgUuid: string, uuid: string) =>
    sql`DELETE FROM guardrail_rules WHERE org_uuid = ${orgUuid}::uuid AND uuid = ${uuid}::uuid RETURNING uuid`.pipe(
      Effect.map((rows) => rows.length > 0),
      Effect.orDie
    )

  const version = (orgUuid: string) =>
    sql<{ readonly version: string }>`SELECT version::text AS version FROM guardrail_rule_versions
      WHERE org_uuid = ${orgUuid}::uuid`.pipe(
      Effect.map((rows) => rows.length === 0 ? "0" : rows[0]!.version),
      Effect.orDie
    )

  // A transaction-scoped advisory lock, released by the commit or rollback, keyed by the organization
  // (one namespace of 64-bit keys is shared with every other advisory lock of the database).
  const exclusive = <A, E>(orgUuid: string, effect: Effect.Effect<A, E>) =>
    sql.withTransaction(
      Effect.andThen(
        sql`SELECT pg_advisory_xact_lock(hashtextextended(${`guardrail_rules:${orgUuid}`}, 0))`.pipe(Effect.orDie),
        effect
      )
    ).pipe(Effect.catchTag("SqlError", Effect.die))

  return { list, find, insert, update, remove, version, exclusive } satisfies GuardrailStore
})

export const memoryGuardrailStore = (): GuardrailStore => {
  const rules = new Map<string, StoredRule>()
  // One process holds this store, so one lock for every organization is enough.
  const lock = Semaphore.makeUnsafe(1)
  const versions = new Map<string, number>()
  const bump = (orgUuid: string) => versions.set(orgUuid, (versions.get(orgUuid) ?? 0) + 1)
  return {
    list: (orgUuid) =>
      Effect.sync(() => [...rules.values()].filter((r) => r.org_uuid === orgUuid).sort(evaluationOrder)),
    find: (orgUuid, uuid) =>
      Effect.sync(() => {
        const rule = rules.get(uuid)
        return rule?.org_uuid === orgUuid ? rule : undefined
      }),
    insert: (rule) =>
      Effect.sync(() => {
        rules.set(rule.uuid, rule)
        bump(rule.org_uuid)
      }),
    update: (rule) =>
      Effect.sync(() => {
        if (rules.get(rule.uuid)?.org_uuid !== rule.org_uuid) return false
        rules.set(rule.uuid, rule)
        bump(rule.org_uuid)
        return true
      }),
    remove: (orgUuid, uuid) =>
      Effect.sync(() => {
        if (rules.get(uuid)?.org_uuid !== orgUuid) return false
        rules.delete(uuid)
        bump(orgUuid)
        return true
      }),
    version: (orgUuid) => Effect.sync(() => String(versions.get(orgUuid) ?? 0)),
    exclusive: (_orgUuid, effect) => lock.withPermit(effect)
  }
}
