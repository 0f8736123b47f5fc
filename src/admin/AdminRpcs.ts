import { Layer } from "effect"
import { CustomProviderAdminRpcHandlers, CustomProviderAdminRpcs } from "../gateway/custom/CustomProviderAdminRpcs.ts"
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
export const AdminRpcs = OrgRpcs.merge(GatewayAdminRpcs, UsageRpcs, IngestRpcs, FirewallAdminRpcs, MemberRpcs, CustomProviderAdminRpcs)

export const AdminRpcHandlers = Layer.mergeAll(
  OrgRpcHandlers,
  GatewayAdminRpcHandlers,
  FirewallAdminRpcHandlers,
  CustomProviderAdminRpcHandlers,
  IngestRpcHandlers,
  MemberRpcHandlers,
  UsageRpcHandlers.pipe(Layer.provide(UsageLog.layer))
)
