import { HealthRoutes } from "./Health.ts"

/** The four HTTP services of `bin/vdb serve`; each later issue mounts its routes here. */
export const SERVICE_NAMES = ["api", "gateway", "site", "mcp"] as const
export type ServiceName = typeof SERVICE_NAMES[number]

export const serviceRoutes = {
  api: HealthRoutes,
  gateway: HealthRoutes,
  site: HealthRoutes,
  mcp: HealthRoutes
} satisfies Record<ServiceName, unknown>
