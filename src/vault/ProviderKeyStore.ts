import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { makeLocalLocks, SharedDatabase } from "../db/SharedDatabase.ts"

export interface ProviderKeyEntry {
  readonly provider: string
  readonly createdAt: Date
  readonly updatedAt: Date
}

/** Rows of the vault. Infrastructure failures are defects here; the service decides how to fail. */
export interface ProviderKeyStore {
  sealedOf(orgUuid: string, provider: string): Effect.Effect<string | undefined>
  put(orgUuid: string, provider: string, sealed: string, keyId: string): Effect.Effect<void>
  remove(orgUuid: string, provider: string): Effect.Effect<boolean>
  list(orgUuid: string): Effect.Effect<ReadonlyArray<ProviderKeyEntry>>
  /**
   * Runs `effect` holding the (organization, provider) lock that every process of the database takes
   * (on a shared PostgreSQL, an advisory lock in a transaction the reads and writes inside join).
   */
  exclusive<A, E>(orgUuid: string, provider: string, effect: Effect.Effect<A, E>): Effect.Effect<A, E>
}

export const sqlProviderKeyStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const shared = yield* SharedDatabase
  const local = makeLocalLocks()

  const sealedOf = (orgUuid: string, provider: string) =>
    sql<{ readonly sealed: string }>`
      SELECT sealed FROM provider_keys WHERE org_uuid = ${orgUuid} AND provider = ${provider}
    `.pipe(Effect.map((rows) => rows[0]?.sealed), Effect.orDie)

  const put = (orgUuid: string, provider: string, sealed: string, keyId: string) =>
    sql`
      INSERT INTO provider_keys (org_uuid, provider, sealed, key_id) VALUES (${orgUuid}, ${provider}, ${sealed}, ${keyId})
      ON CONFLICT (org_uuid, provider) DO UPDATE SET sealed = excluded.sealed, key_id = excluded.key_id, updated_at = now()
    `.pipe(Effect.asVoid, Effect.orDie)

  const remove = (orgUuid: string, provider: string) =>
    sql`DELETE FROM provider_keys WHERE org_uuid = ${orgUuid} AND provider = ${provider} RETURNING provider`.pipe(
      Effect.map((rows) => rows.length > 0),
      Effect.orDie
    )

  const list = (orgUuid: string) =>
    sql<{ readonly provider: string; readonly created_at: Date | string; readonly updated_at: Date | string }>`
      SELECT provider, created_at, updated_at FROM provider_keys WHERE org_uuid = ${orgUuid} ORDER BY provider
    `.pipe(
      Effect.map((rows) =>
        rows.map((row) => ({
          provider: row.provider,
          createdAt: new Date(row.created_at),
          updatedAt: new Date(row.updated_at)
        }))
      ),
      Effect.orDie
    )

  const exclusive = <A, E>(orgUuid: string, provider: string, effect: Effect.Effect<A, E>) =>
    shared
      ? sql.withTransaction(
        Effect.andThen(
          sql`SELECT pg_advisory_xact_lock(hashtextextended(${`provider_keys:${orgUuid}/${provider}`}, 0))`.pipe(Effect.orDie),
          effect
        )
      ).pipe(Effect.catchTag("SqlError", Effect.die))
      // One process: no transaction, so PGlite's single session is not held while `effect` waits on the network.
      : local(`${orgUuid}/${provider}`, effect)

  return { sealedOf, put, remove, list, exclusive } satisfies ProviderKeyStore
})

export const memoryProviderKeyStore = (): ProviderKeyStore => {
  const rows = new Map<string, { sealed: string; entry: ProviderKeyEntry }>()
  const id = (orgUuid: string, provider: string) => `${orgUuid}/${provider}`
  const local = makeLocalLocks()
  return {
    exclusive: (orgUuid, provider, effect) => local(id(orgUuid, provider), effect),
    sealedOf: (orgUuid, provider) => Effect.sync(() => rows.get(id(orgUuid, provider))?.sealed),
    put: (orgUuid, provider, sealed) =>
      Effect.sync(() => {
        const now = new Date()
        const createdAt = rows.get(id(orgUuid, provider))?.entry.createdAt ?? now
        rows.set(id(orgUuid, provider), { sealed, entry: { provider, createdAt, updatedAt: now } })
      }),
    remove: (orgUuid, provider) => Effect.sync(() => rows.delete(id(orgUuid, provider))),
    list: (orgUuid) =>
      Effect.sync(() =>
        Array.from(rows.entries())
          .filter(([key]) => key.startsWith(`${orgUuid}/`))
          .map(([, row]) => row.entry)
          .sort((a, b) => a.provider.localeCompare(b.provider))
      )
  }
}
