import { Layer } from "effect"
import { ApiRoutes } from "../api/ApiRoutes.ts"
import { GatewayRoutes } from "../gateway/GatewayRoutes.ts"
import { McpRoutes } from "../mcp/McpRoutes.ts"
import { SiteRoutes } from "../site/SiteRoutes.ts"
import { HealthRoutes } from "./Health.ts"

/** The four HTTP services of `bin/vdb serve`; each mounts its routes here. */
export const SERVICE_NAMES = ["api", "gateway", "site", "mcp"] as const
export type ServiceName = typeof SERVICE_NAMES[number]

/** The variable that sets each service's port (src/config/AppConfig.ts), named in start-up errors. */
export const PORT_VARIABLES = {
  api: "VDB_API_PORT",
  gateway: "VDB_GATEWAY_PORT",
  site: "VDB_SITE_PORT",
  mcp: "VDB_MCP_PORT"
} satisfies Record<ServiceName, string>

export const serviceRoutes = {
  api: Layer.mergeAll(HealthRoutes, ApiRoutes),
  gateway: Layer.mergeAll(HealthRoutes, GatewayRoutes),
  site: Layer.mergeAll(HealthRoutes, SiteRoutes),
  mcp: Layer.mergeAll(HealthRoutes, McpRoutes)
} satisfies Record<ServiceName, unknown>

type AnyRoutes = typeof serviceRoutes[ServiceName]

/** One service's routes, typed as the union of what any service needs (the app layer provides it all). */
export const routesOf = (name: ServiceName): Layer.Layer<never, Layer.Error<AnyRoutes>, Layer.Services<AnyRoutes>> =>
  serviceRoutes[name]
