import { Layer } from "effect"
import { FeedRpcHandlers } from "../feeds/FeedRpcHandlers.ts"
import { IngestRpcHandlers } from "../ingest/IngestRpcHandlers.ts"
import { MemberRpcHandlers } from "../members/MemberRpcHandlers.ts"
import { OrgRpcHandlers } from "../orgs/OrgRpcHandlers.ts"
import { UsageLog } from "../usage/UsageLog.ts"
import { UsageRpcHandlers } from "../usage/UsageRpcHandlers.ts"
import { CustomProviderAdminRpcHandlers } from "./CustomProviderAdminRpcHandlers.ts"
import { FirewallAdminRpcHandlers } from "./FirewallAdminRpcHandlers.ts"
import { GatewayAdminRpcHandlers } from "./GatewayAdminRpcHandlers.ts"

/** The handlers of every group in `AdminRpcs`, on the domains' services. */
export const AdminRpcHandlers = Layer.mergeAll(
  OrgRpcHandlers,
  GatewayAdminRpcHandlers,
  FirewallAdminRpcHandlers,
  CustomProviderAdminRpcHandlers,
  IngestRpcHandlers,
  MemberRpcHandlers,
  FeedRpcHandlers,
  UsageRpcHandlers.pipe(Layer.provide(UsageLog.layer))
)
