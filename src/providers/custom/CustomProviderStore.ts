import { DateTime, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { CustomProvider, type CustomSurface } from "./CustomProvider.ts"

/** A validated registration to store. */
export interface CustomProviderInput {
  readonly slug: string
  readonly baseUrl: string
  readonly surfaces: ReadonlyArray<CustomSurface>
  readonly auth: string
  readonly defaultHeaders: Readonly<Record<string, string>>
}

/** Rows of `custom_providers`. Infrastructure failures are defects here; the service decides how to fail. */
export interface CustomProviderStore {
  list(orgUuid: string): Effect.Effect<ReadonlyArray<CustomProvider>>
  /** `false` when the organization already has that slug. */
  insert(orgUuid: string, input: CustomProviderInput): Effect.Effect<CustomProvider | undefined>
  remove(orgUuid: string, slug: string): Effect.Effect<boolean>
}

interface Row {
  readonly org_uuid: string
  readonly slug: string
  readonly base_url: string
  readonly surfaces: ReadonlyArray<CustomSurface>
  readonly auth: string
  readonly default_headers: Record<string, string> | string
  readonly created_at: Date | string
}

const toProvider = (row: Row) =>
  new CustomProvider({
    org_uuid: row.org_uuid,
    slug: row.slug,
    base_url: row.base_url,
    surfaces: row.surfaces,
    auth: row.auth,
    default_headers: typeof row.default_headers === "string" ? JSON.parse(row.default_headers) : row.default_headers,
    created_at: DateTime.fromDateUnsafe(new Date(row.created_at))
  })

export const sqlCustomProviderStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const columns = sql`org_uuid::text AS org_uuid, slug, base_url, surfaces, auth, default_headers, created_at`

  const list = (orgUuid: string) =>
    sql<Row>`SELECT ${columns} FROM custom_providers WHERE org_uuid = ${orgUuid}::uuid ORDER BY slug`.pipe(
      Effect.map((rows) => rows.map(toProvider)),
      Effect.orDie
    )

  const insert = (orgUuid: string, input: CustomProviderInput) =>
    sql<Row>`
      INSERT INTO custom_providers (org_uuid, slug, base_url, surfaces, auth, default_headers)
      VALUES (${orgUuid}::uuid, ${input.slug}, ${input.baseUrl}, ${[...input.surfaces]}::text[], ${input.auth},
        ${JSON.stringify(input.defaultHeaders)}::jsonb)
      ON CONFLICT (org_uuid, slug) DO NOTHING
      RETURNING ${columns}
    `.pipe(Effect.map((rows) => rows.length === 0 ? undefined : toProvider(rows[0]!)), Effect.orDie)

  const remove = (orgUuid: string, slug: string) =>
    sql`DELETE FROM custom_providers WHERE org_uuid = ${orgUuid}::uuid AND slug = ${slug} RETURNING slug`.pipe(
      Effect.map((rows) => rows.length > 0),
      Effect.orDie
    )

  return { list, insert, remove } satisfies CustomProviderStore
})

export const memoryCustomProviderStore = (): CustomProviderStore => {
  const rows = new Map<string, CustomProvider>()
  const id = (orgUuid: string, slug: string) => `${orgUuid}/${slug}`
  return {
    list: (orgUuid) =>
      Effect.sync(() =>
        Array.from(rows.values()).filter((p) => p.org_uuid === orgUuid).sort((a, b) => a.slug.localeCompare(b.slug))
      ),
    insert: (orgUuid, input) =>
      Effect.sync(() => {
        if (rows.has(id(orgUuid, input.slug))) return undefined
        const provider = new CustomProvider({
          org_uuid: orgUuid,
          slug: input.slug,
          base_url: input.baseUrl,
          surfaces: input.surfaces,
          auth: input.auth,
          default_headers: { ...input.defaultHeaders },
          created_at: DateTime.nowUnsafe()
        })
        rows.set(id(orgUuid, input.slug), provider)
        return provider
      }),
    remove: (orgUuid, slug) => Effect.sync(() => rows.delete(id(orgUuid, slug)))
  }
}
