import { Layer } from "effect"
import { GatewayAdminRpcHandlers, GatewayAdminRpcs } from "../gateway/GatewayAdminRpcs.ts"
import { OrgRpcHandlers, OrgRpcs } from "../orgs/OrgRpcs.ts"

/**
 * Every administrative operation, one RPC group per domain merged here. The
 * running server serves it on the admin socket; the CLI is its client.
 */
export const AdminRpcs = OrgRpcs.merge(GatewayAdminRpcs)

export const AdminRpcHandlers = Layer.mergeAll(OrgRpcHandlers, GatewayAdminRpcHandlers)
