import { Layer } from "effect"
import { OrgRpcHandlers, OrgRpcs } from "../orgs/OrgRpcs.ts"

/**
 * Every administrative operation, one RPC group per domain merged here. The
 * running server serves it on the admin socket; the CLI is its client.
 */
export const AdminRpcs = OrgRpcs

export const AdminRpcHandlers = Layer.mergeAll(OrgRpcHandlers)
