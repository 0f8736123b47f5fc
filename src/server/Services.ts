import { Layer } from "effect"
import { ApiRoutes } from "../api/ApiRoutes.ts"
import { HealthRoutes } from "./Health.ts"

/** The four HTTP services of `bin/vdb serve`; each later issue mounts its routes here. */
export const SERVICE_NAMES = ["api", "gateway", "site", "mcp"] as const
export type ServiceName = typeof SERVICE_NAMES[number]

export const serviceRoutes = {
  api: Layer.mergeAll(HealthRoutes, ApiRoutes),
  gateway: HealthRoutes,
  site: HealthRoutes,
  mcp: HealthRoutes
} satisfies Record<ServiceName, unknown>
