import { Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ApiKeyAuth } from "../auth/ApiKeyAuth.ts"
import { Jwt } from "../auth/Jwt.ts"
import { VerifiedTokens } from "../auth/VerifiedTokens.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { UsageLog } from "../usage/UsageLog.ts"
import { PackageIndex } from "../vulns/PackageIndex.ts"
import { Api } from "./Api.ts"
import { ApiDocs } from "./ApiDocs.ts"
import { AuthenticationLive, SignedRequestLive } from "./AuthenticationLive.ts"
import { AuthHandlers } from "./handlers/AuthHandlers.ts"
import { OsvHandlers } from "./handlers/OsvHandlers.ts"
import { VulnHandlers } from "./handlers/VulnHandlers.ts"
import { MeteringLive, RequestValidationLive } from "./MeteringLive.ts"
import { QueryBodyLimitLive } from "./QueryBodyLimitLive.ts"
import { QueryFastPath } from "./QueryFastPath.ts"
import { QueryListener } from "./QueryListener.ts"
import { ResponseCache } from "./ResponseCache.ts"
import { RouteFallback } from "./RouteFallback.ts"
import { VulnFastPath } from "./VulnFastPath.ts"

const Middleware = Layer.mergeAll(
  AuthenticationLive,
  SignedRequestLive,
  MeteringLive,
  RequestValidationLive,
  QueryBodyLimitLive
)

/**
 * The API service's routes (`/v1/...`, `/v1/openapi.json`, `/docs`, `/`) with the
 * auth, rate-limit, usage-log and cache services built in, and the dialect's
 * 404/405 for requests no route takes (`RouteFallback`). Needs
 * `Organizations`, `VulnStore`, `SecretBox` and a `SqlClient`.
 */
export const ApiRoutesWith = <R1, R2>(services: {
  readonly rateLimiter: Layer.Layer<RateLimiter, never, R1>
  readonly usageLog: Layer.Layer<UsageLog, never, R2>
}) =>
  Layer.mergeAll(
    HttpApiBuilder.layer(Api, { openapiPath: "/v1/openapi.json" }),
    ApiDocs,
    RouteFallback,
    VulnFastPath,
    QueryFastPath,
    QueryListener
  ).pipe(
    Layer.provide([AuthHandlers, VulnHandlers, OsvHandlers]),
    Layer.provide(Middleware),
    Layer.provide([ResponseCache.layer, VerifiedTokens.layer, PackageIndex.layer, ApiKeyAuth.layer]),
    Layer.provide([Jwt.layer, services.rateLimiter, services.usageLog])
  )

/** Production: counters and usage log in PostgreSQL. */
export const ApiRoutes = ApiRoutesWith({ rateLimiter: RateLimiter.layer, usageLog: UsageLog.layer })
