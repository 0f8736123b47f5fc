import { Effect } from "effect"
import { SqlClient } from "effect/sql"

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
   * Takes the row's lease for `holder` for `ttlMs` when no other lease runs (none, ended or
   * expired): the sealed value then; `"held"` while another holder's lease runs; `"missing"`
   * when there is no row.
   */
  claim(
    orgUuid: string,
    provider: string,
    holder: string,
    ttlMs: number
  ): Effect.Effect<{ readonly sealed: string } | "held" | "missing">
  /**
   * Ends `holder`'s lease (if it still runs). With `write`, first stores `write.sealed` if the row
   * still holds `write.expected` (whoever holds the lease by then): whether it was stored.
   */
  release(
    orgUuid: string,
    provider: string,
    holder: string,
    write?: { readonly expected: string; readonly sealed: string; readonly keyId: string }
  ): Effect.Effect<boolean>
}

export const sqlProviderKeyStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

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

  const claim = (orgUuid: string, provider: string, holder: string, ttlMs: number) =>
    Effect.gen(function*() {
      const claimed = yield* sql<{ readonly sealed: string }>`
        UPDATE provider_keys SET lease_holder = ${holder}, lease_until = now() + ${ttlMs} * interval '1 millisecond'
        WHERE org_uuid = ${orgUuid} AND provider = ${provider} AND (lease_until IS NULL OR lease_until < now())
        RETURNING sealed`
      if (claimed.length > 0) return { sealed: claimed[0]!.sealed }
      const present = yield* sql`SELECT 1 FROM provider_keys WHERE org_uuid = ${orgUuid} AND provider = ${provider}`
      return present.length > 0 ? "held" as const : "missing" as const
    }).pipe(Effect.orDie)

  const release = (
    orgUuid: string,
    provider: string,
    holder: string,
    write?: { readonly expected: string; readonly sealed: string; readonly keyId: string }
  ) =>
    Effect.gen(function*() {
      if (write !== undefined) {
        // Every SET expression reads the row as it was: the lease ends only if it is still this holder's.
        const stored = yield* sql`
          UPDATE provider_keys SET sealed = ${write.sealed}, key_id = ${write.keyId}, updated_at = now(),
            lease_holder = CASE WHEN lease_holder = ${holder} THEN NULL ELSE lease_holder END,
            lease_until = CASE WHEN lease_holder = ${holder} THEN NULL ELSE lease_until END
          WHERE org_uuid = ${orgUuid} AND provider = ${provider} AND sealed = ${write.expected}
          RETURNING 1`
        if (stored.length > 0) return true
      }
      yield* sql`UPDATE provider_keys SET lease_holder = NULL, lease_until = NULL
        WHERE org_uuid = ${orgUuid} AND provider = ${provider} AND lease_holder = ${holder}`
      return false
    }).pipe(Effect.orDie)

  return { sealedOf, put, remove, list, claim, release } satisfies ProviderKeyStore
})

export const memoryProviderKeyStore = (): ProviderKeyStore => {
  const rows = new Map<string, { sealed: string; entry: ProviderKeyEntry; lease?: { holder: string; until: number } }>()
  const id = (orgUuid: string, provider: string) => `${orgUuid}/${provider}`
  return {
    claim: (orgUuid, provider, holder, ttlMs) =>
      Effect.sync(() => {
        const row = rows.get(id(orgUuid, provider))
        if (row === undefined) return "missing" as const
        const now = Date.now()
        if (row.lease !== undefined && row.lease.until >= now) return "held" as const
        row.lease = { holder, until: now + ttlMs }
        return { sealed: row.sealed }
      }),
    release: (orgUuid, provider, holder, write) =>
      Effect.sync(() => {
        const row = rows.get(id(orgUuid, provider))
        if (row === undefined) return false
        const ours = row.lease?.holder === holder
        if (ours) delete row.lease
        if (write === undefined || row.sealed !== write.expected) return false
        row.sealed = write.sealed
        row.entry = { ...row.entry, updatedAt: new Date() }
        return true
      }),
    sealedOf: (orgUuid, provider) => Effect.sync(() => rows.get(id(orgUuid, provider))?.sealed),
    put: (orgUuid, provider, sealed) =>
      Effect.sync(() => {
        const now = new Date()
        const existing = rows.get(id(orgUuid, provider))
        const createdAt = existing?.entry.createdAt ?? now
        // As the SQL upsert: a running lease stays (its holder's write-back then finds another value).
        rows.set(id(orgUuid, provider), {
          sealed,
          entry: { provider, createdAt, updatedAt: now },
          ...(existing?.lease ? { lease: existing.lease } : {})
        })
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
