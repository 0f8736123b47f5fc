import { Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ApprovalThrottle } from "../device/ApprovalThrottle.ts"
import { AuthorizeLimiter } from "../device/AuthorizeLimiter.ts"
import { SignInThrottle } from "../members/SignInThrottle.ts"
import { SiteApi } from "./Api.ts"
import { DeviceHandlers, RetiredHandlers } from "./DeviceHandlers.ts"
import { PageHandlers } from "./PageHandlers.ts"
import { SessionHandlers } from "./SessionHandlers.ts"

/**
 * The site service's routes: device grant, sessions, pages, the retired poll
 * path and `/api/site/v1/openapi.json`. The limiter and throttles live in the
 * process; grants, members, sessions and organizations come from the app.
 */
export const SiteRoutes = HttpApiBuilder.layer(SiteApi, { openapiPath: "/api/site/v1/openapi.json" }).pipe(
  Layer.provide([DeviceHandlers, RetiredHandlers, SessionHandlers, PageHandlers]),
  Layer.provide([AuthorizeLimiter.layerMemory, ApprovalThrottle.layerMemory, SignInThrottle.layerMemory])
)
