import { Layer } from "effect"
import { FirewallAdminRpcHandlers, FirewallAdminRpcs } from "../gateway/FirewallAdminRpcs.ts"
import { GatewayAdminRpcHandlers, GatewayAdminRpcs } from "../gateway/GatewayAdminRpcs.ts"
import { IngestRpcHandlers, IngestRpcs } from "../ingest/IngestRpcs.ts"
import { MemberRpcHandlers, MemberRpcs } from "../members/MemberRpcs.ts"
import { OrgRpcHandlers, OrgRpcs } from "../orgs/OrgRpcs.ts"
import { UsageLog } from "../usage/UsageLog.ts"
import { UsageRpcHandlers, UsageRpcs } from "../usage/UsageRpcs.ts"

/**
 * Every administrative operation, one RPC group per domain merged here. The
 * running server serves it on the admin socket; the CLI is its client.
 */
export const AdminRpcs = OrgRpcs.merge(GatewayAdminRpcs, UsageRpcs, IngestRpcs, FirewallAdminRpcs, MemberRpcs)

export const AdminRpcHandlers = Layer.mergeAll(
  OrgRpcHandlers,
  GatewayAdminRpcHandlers,
  FirewallAdminRpcHandlers,
  IngestRpcHandlers,
  MemberRpcHandlers,
  UsageRpcHandlers.pipe(Layer.provide(UsageLog.layer))
)
