import { Context } from "effect"

/**
 * The authenticated organization of the current request, as the surfaces that sign a request in
 * with the organization's credential (the vulnerability API, the gateway's management API)
 * provide it to their handlers.
 */
export class CurrentOrg extends Context.Service<CurrentOrg, {
  readonly uuid: string
  readonly perMinute: number
  readonly perWeek: number
}>()("vdb/auth/CurrentOrg") {}
