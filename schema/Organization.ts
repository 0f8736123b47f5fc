import { Schema } from "effect"

export const OrgUuid = Schema.String.check(Schema.isUUID()).pipe(Schema.brand("OrgUuid"))
export type OrgUuid = typeof OrgUuid.Type

/** A per-window request limit; 0 means unlimited. */
export const RequestLimit = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

export class Organization extends Schema.Class<Organization>("Organization")({
  uuid: OrgUuid,
  name: Schema.String,
  isActive: Schema.Boolean,
  perMinute: RequestLimit,
  perWeek: RequestLimit,
  createdAt: Schema.DateTimeUtcFromString,
  updatedAt: Schema.DateTimeUtcFromString
}) {}

/** What `org create` and `org rotate-secret` return: the only time the secret is shown. */
export class OrgCredentials extends Schema.Class<OrgCredentials>("OrgCredentials")({
  uuid: OrgUuid,
  name: Schema.String,
  secret: Schema.String,
  apiKey: Schema.String
}) {}

export const OrgLimits = Schema.Struct({
  perMinute: Schema.optional(RequestLimit),
  perWeek: Schema.optional(RequestLimit)
})
export type OrgLimits = typeof OrgLimits.Type
