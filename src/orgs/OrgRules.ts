import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { OrgCredentials, type OrgLimits, OrgUuid } from "../../schema/Organization.ts"
import { formatApiKey } from "../auth/ApiKey.ts"
import { OrgError, OrgInvalid, OrgNotFound } from "./OrgError.ts"

/**
 * What an organization must be (a name, limits in range, a UUID to name it) and what creating
 * one or rotating its secret gives, the same for both of the service's layers.
 */
export interface NewOrganization {
  readonly name: string
  readonly perMinute?: number | undefined
  readonly perWeek?: number | undefined
}

export const DEFAULT_PER_MINUTE = 5
export const DEFAULT_PER_WEEK = 1000

/** 32 bytes from the CSPRNG as 64 lowercase hex characters. */
export const newSecret = () => randomBytes(32).toString("hex")

export const credentials = (uuid: string, name: string, secret: string) =>
  new OrgCredentials({ uuid: OrgUuid.make(uuid), name, secret, apiKey: formatApiKey(uuid, secret) })

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const invalid = (reason: string) => Effect.fail(new OrgError({ reason: new OrgInvalid({ reason }) }))
export const notFound = (uuid: string) => Effect.fail(new OrgError({ reason: new OrgNotFound({ uuid }) }))

export const validUuid = (raw: string) =>
  UUID.test(raw.trim()) ? Effect.succeed(raw.trim().toLowerCase()) : invalid(`not a UUID: ${JSON.stringify(raw)}`)

const validLimit = (name: string, value: number | undefined) =>
  value === undefined || (Number.isInteger(value) && value >= 0 && value <= 2_147_483_647)
    ? Effect.void
    : invalid(`${name} must be a whole number >= 0 (0 = unlimited), got ${value}`)

export const validLimits = (limits: OrgLimits) =>
  Effect.andThen(validLimit("per-minute limit", limits.perMinute), validLimit("per-week limit", limits.perWeek))

export const validNew = Effect.fnUntraced(function*(input: NewOrganization) {
  const name = input.name.trim()
  if (name.length === 0 || name.length > 200) return yield* invalid("name must be 1 to 200 characters")
  yield* validLimits(input)
  return { name, perMinute: input.perMinute ?? DEFAULT_PER_MINUTE, perWeek: input.perWeek ?? DEFAULT_PER_WEEK }
})
