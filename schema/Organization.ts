import { Schema } from "effect"
import { UNPRINTABLE } from "./PrintableText.ts"

export const OrgUuid = Schema.String.check(Schema.isUUID()).pipe(Schema.brand("OrgUuid"))
export type OrgUuid = typeof OrgUuid.Type

/** Longest organization name in characters, after surrounding whitespace is trimmed. */
export const ORG_NAME_MAX_LENGTH = 200

/** Why a proposed organization name is refused, or undefined when it is acceptable. */
export const orgNameProblem = (raw: string): string | undefined => {
  const name = raw.trim()
  if (name.length === 0) return "the organization name is empty"
  if (name.length > ORG_NAME_MAX_LENGTH) {
    return `the organization name is longer than ${ORG_NAME_MAX_LENGTH} characters`
  }
  if (UNPRINTABLE.test(name) || !name.isWellFormed()) {
    return "the organization name must be printable text (no control characters such as newlines or tabs)"
  }
  return undefined
}

/** A name as given to `org create`: printable, 1 to 200 characters once trimmed. */
export const OrgName = Schema.String.check(Schema.makeFilter((raw: string) => orgNameProblem(raw)))

/** A per-window request limit; 0 means unlimited. */
export const RequestLimit = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

export class Organization extends Schema.Class<Organization>("Organization")({
  uuid: OrgUuid,
  // Not OrgName: a name stored before names were validated must still list (the CLI escapes it).
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
