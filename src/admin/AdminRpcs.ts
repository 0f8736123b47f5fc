import { FeedRpcs } from "../feeds/FeedRpcs.ts"
import { IngestRpcs } from "../ingest/IngestRpcs.ts"
import { MemberRpcs } from "../members/MemberRpcs.ts"
import { OrgRpcs } from "../orgs/OrgRpcs.ts"
import { UsageRpcs } from "../usage/UsageRpcs.ts"
import { CustomProviderAdminRpcs } from "./CustomProviderAdminRpcs.ts"
import { FirewallAdminRpcs } from "./FirewallAdminRpcs.ts"
import { GatewayAdminRpcs } from "./GatewayAdminRpcs.ts"

/**
 * Every administrative operation, one RPC group per domain merged here. The
 * running server serves it on the admin socket; the CLI is its client.
 * Definitions only: a CLI talking to a running server loads none of the
 * handlers' domain code (`AdminRpcHandlers.ts`), which is most of its start-up.
 */
export const AdminRpcs = OrgRpcs.merge(
  GatewayAdminRpcs,
  UsageRpcs,
  IngestRpcs,
  FirewallAdminRpcs,
  MemberRpcs,
  CustomProviderAdminRpcs,
  FeedRpcs
)
