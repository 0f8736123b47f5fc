import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Where service-key verifiers live. Infrastructure failures are defects here;
 * the service turns them into `BackendUnavailable` on the verification path.
 */
export interface ServiceKeyStore {
  verifierOf(orgUuid: string): Effect.Effect<Buffer | undefined>
  /** `create` only writes when the organization has no key yet; returns whether it wrote. */
  put(orgUuid: string, verifier: Buffer, mode: "create" | "replace"): Effect.Effect<boolean>
  remove(orgUuid: string): Effect.Effect<boolean>
}

export const sqlServiceKeyStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  const verifierOf = (orgUuid: string) =>
    sql<{ readonly verifier: string }>`
      SELECT verifier FROM gateway_service_keys WHERE org_uuid = ${orgUuid}
    `.pipe(
      Effect.map((rows) => rows.length === 0 ? undefined : Buffer.from(rows[0]!.verifier, "hex")),
      Effect.orDie
    )

  const put = (orgUuid: string, verifier: Buffer, mode: "create" | "replace") => {
    const hex = verifier.toString("hex")
    const statement = mode === "create"
      ? sql`
          INSERT INTO gateway_service_keys (org_uuid, verifier) VALUES (${orgUuid}, ${hex})
          ON CONFLICT (org_uuid) DO NOTHING
          RETURNING org_uuid
        `
      : sql`
          INSERT INTO gateway_service_keys (org_uuid, verifier) VALUES (${orgUuid}, ${hex})
          ON CONFLICT (org_uuid) DO UPDATE SET verifier = excluded.verifier, rotated_at = now()
          RETURNING org_uuid
        `
    return statement.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)
  }

  const remove = (orgUuid: string) =>
    sql`DELETE FROM gateway_service_keys WHERE org_uuid = ${orgUuid} RETURNING org_uuid`.pipe(
      Effect.map((rows) => rows.length > 0),
      Effect.orDie
    )

  return { verifierOf, put, remove } satisfies ServiceKeyStore
})

export const memoryServiceKeyStore = (): ServiceKeyStore => {
  const rows = new Map<string, Buffer>()
  return {
    verifierOf: (orgUuid) => Effect.sync(() => rows.get(orgUuid)),
    put: (orgUuid, verifier, mode) =>
      Effect.sync(() => {
        if (mode === "create" && rows.has(orgUuid)) return false
        rows.set(orgUuid, verifier)
        return true
      }),
    remove: (orgUuid) => Effect.sync(() => rows.delete(orgUuid))
  }
}
