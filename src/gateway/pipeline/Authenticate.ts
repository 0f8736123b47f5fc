import { Effect } from "effect"
import { InvalidApiKey } from "../../../schema/GatewayError.ts"
import type { BackendUnavailable, ServiceKeys } from "../../servicekeys/ServiceKeys.ts"

type HeaderRecord = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

const ORG_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const invalidApiKey = new InvalidApiKey()

const single = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : undefined

/** The service key from `Authorization: Bearer` or `x-api-key`, whichever carries one. */
export const presentedServiceKey = (headers: HeaderRecord): string | undefined => {
  const authorization = single(headers["authorization"])
  if (
    authorization !== undefined && authorization.length > 7 && authorization.slice(0, 7).toLowerCase() === "bearer "
  ) {
    const token = authorization.slice(7).trim()
    if (token !== "") return token
  }
  const apiKey = single(headers["x-api-key"])?.trim()
  return apiKey === "" ? undefined : apiKey
}

/** The legacy `X-Organisation-UUID` header. */
export const headerOrg = (headers: HeaderRecord): string | undefined => single(headers["x-organisation-uuid"])

/**
 * The organization, once its service key checks out. Every failure is the
 * same 401 `invalid_api_key` (missing key, wrong key, unknown, malformed or
 * inactive organization, no organization, a provider key in its place); an
 * unreachable backend is a 503, never a pass.
 */
export const authenticate = (
  serviceKeys: ServiceKeys["Service"],
  orgUuid: string | undefined,
  headers: HeaderRecord
): Effect.Effect<string, InvalidApiKey | BackendUnavailable> => {
  const key = presentedServiceKey(headers)
  if (orgUuid === undefined || key === undefined || !ORG_UUID.test(orgUuid)) return Effect.fail(invalidApiKey)
  const org = orgUuid.toLowerCase()
  return Effect.flatMap(
    serviceKeys.verify(org, key),
    (check) => check === "valid" ? Effect.succeed(org) : Effect.fail(invalidApiKey)
  )
}
