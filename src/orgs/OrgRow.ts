import { DateTime, Schema } from "effect"
import { Organization, OrgUuid } from "../../schema/Organization.ts"

/** Every query of `organizations` reads the same columns, decoded by `OrgRow`. */
export const ORG_COLUMNS =
  "uuid::text AS uuid, name, secret_sealed, is_active, per_minute, per_week, created_at, updated_at"

export const OrgRow = Schema.Struct({
  uuid: Schema.String,
  name: Schema.String,
  secret_sealed: Schema.String,
  is_active: Schema.Boolean,
  per_minute: Schema.Number,
  per_week: Schema.Number,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type OrgRow = typeof OrgRow.Type
export const decodeRows = Schema.decodeUnknownEffect(Schema.Array(OrgRow))

export const toOrganization = (row: OrgRow) =>
  new Organization({
    uuid: OrgUuid.make(row.uuid),
    name: row.name,
    isActive: row.is_active,
    perMinute: row.per_minute,
    perWeek: row.per_week,
    createdAt: DateTime.fromDateUnsafe(row.created_at),
    updatedAt: DateTime.fromDateUnsafe(row.updated_at)
  })
