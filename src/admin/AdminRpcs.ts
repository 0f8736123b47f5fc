import { Layer } from "effect"
import { GatewayAdminRpcHandlers, GatewayAdminRpcs } from "../gateway/GatewayAdminRpcs.ts"
import { IngestRpcHandlers, IngestRpcs } from "../ingest/IngestRpcs.ts"
import { OrgRpcHandlers, OrgRpcs } from "../orgs/OrgRpcs.ts"
import { UsageLog } from "../usage/UsageLog.ts"
import { UsageRpcHandlers, UsageRpcs } from "../usage/UsageRpcs.ts"

/**
 * Every administrative operation, one RPC group per domain merged here. The
 * running server serves it on the admin socket; the CLI is its client.
 */
export const AdminRpcs = OrgRpcs.merge(GatewayAdminRpcs, UsageRpcs, IngestRpcs)

export const AdminRpcHandlers = Layer.mergeAll(
  OrgRpcHandlers,
  GatewayAdminRpcHandlers,
  IngestRpcHandlers,
  UsageRpcHandlers.pipe(Layer.provide(UsageLog.layer))
)
