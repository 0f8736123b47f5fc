import type { Cause, Config } from "effect"
import { Effect, Layer } from "effect"
import { McpProtocol, McpServer } from "effect/ai"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { SqlClient } from "effect/sql"
import { ApiKeyAuth } from "../auth/ApiKeyAuth.ts"
import { DATABASE_RETRY_AFTER_SECONDS, DATABASE_UNAVAILABLE, isDatabaseUnavailable } from "../db/DatabaseUnavailable.ts"
import type { Invalidation } from "../db/Invalidation.ts"
import { Guardrails } from "../guardrails/Guardrails.ts"
import type { InferenceLog } from "../inference/InferenceLog.ts"
import { Nonces } from "../nonces/Nonces.ts"
import type { Organizations } from "../orgs/Organizations.ts"
import { Policies } from "../policies/Policies.ts"
import { RateLimiter } from "../ratelimit/RateLimiter.ts"
import { TrustedProxies } from "../server/ClientAddress.ts"
import {
  routeFallback,
  UNMATCHED_CODES,
  unmatchedHeaders,
  unmatchedMessage,
  unmatchedStatus
} from "../server/RouteFallback.ts"
import { UsageLog } from "../usage/UsageLog.ts"
import type { VulnStore } from "../vulns/VulnStore.ts"
import { DISCOVERY_PATH, MCP_PATH, originOf, ServiceHost } from "./McpAddress.ts"
import { CallerMiddleware } from "./McpCaller.ts"
import { McpGate } from "./McpGate.ts"
import { McpPromptsLayer } from "./McpPrompts.ts"
import { errorBody } from "./McpRefusals.ts"
import { McpResourcesLayer } from "./McpResources.ts"
import { McpToolHandlers, McpToolsLayer } from "./McpTools.ts"

export const MCP_SERVER_NAME = "vdb"
export const MCP_SERVER_VERSION = "1.0.0"

/**
 * The revisions served: the stateless `2026-07-28`, then the session-based
 * ones newest first (a client offering an unknown revision gets the first
 * session-based one in this list).
 */
export const MCP_PROTOCOLS = [
  McpProtocol.v2026_07_28,
  McpProtocol.v2025_11_25,
  McpProtocol.v2025_06_18,
  McpProtocol.v2025_03_26,
  McpProtocol.v2024_11_05
] as const

/**
 * RFC 9728 protected-resource metadata: what this resource is and how to authenticate to it. The
 * document names `VDB_MCP_URL`, or else the request's Host, so a cache keeps one per Host (`vary`);
 * one that names the service's own address instead (the Host was not a valid `host[:port]`) is kept
 * by no shared cache.
 */
const discovery = Layer.unwrap(Effect.gen(function*() {
  const serviceHost = yield* ServiceHost
  return HttpRouter.add(
    "GET",
    DISCOVERY_PATH,
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const { origin, shared } = originOf(request, serviceHost, yield* TrustedProxies.useSync((list) => list))
      return HttpServerResponse.jsonUnsafe({
        resource: `${origin}${MCP_PATH}`,
        resource_name: "vdb MCP server: vulnerability intelligence and AI-gateway tools",
        authorization_servers: [],
        bearer_methods_supported: [],
        // Not OAuth: the organization's API key, the same credential as the vulnerability API.
        authentication_schemes: [{
          scheme: "ApiKey",
          header: "Authorization",
          format: "ApiKey <org_uuid>:<hex(HMAC-SHA256(key=org secret, data=org uuid))>",
          documentation: "bin/vdb org create prints the organization uuid, secret and ready-made apiKey header value"
        }],
        mcp_protocol_versions: ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
      }, { headers: { "cache-control": shared ? "public, max-age=300" : "private, no-store", vary: "host" } })
    })
  )
}))

/** Liveness without credentials (the service also has the shared `/healthz` and `/readyz`). */
const health = HttpRouter.add("GET", "/health", HttpServerResponse.jsonUnsafe({ status: "ok" }))

/**
 * The MCP service's answers for requests no route takes, in its dialect (`{error:{code,message}}`):
 * 404 `not_found`, 405 `method_not_allowed` with `Allow`, 414 `uri_too_long`.
 */
const fallback = routeFallback(
  [["POST", MCP_PATH], ["DELETE", MCP_PATH], ["GET", DISCOVERY_PATH], ["GET", "/health"]],
  (unmatched) =>
    errorBody(
      unmatchedStatus(unmatched),
      UNMATCHED_CODES[unmatched._tag],
      unmatchedMessage(unmatched),
      unmatchedHeaders(unmatched)
    )
)

/**
 * A request that failed past every handler (a bug, or a database that cannot be reached) is answered
 * in the service's dialect rather than the platform's empty 500: 503 `unavailable` with
 * `Retry-After` while the database is away, else 500 `internal_error`. Nothing of the cause leaves.
 */
const failures = HttpRouter.middleware(
  <E, R>(httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.catchDefect(httpEffect, (defect) =>
      isDatabaseUnavailable(defect)
        ? Effect.as(
          Effect.logWarning("mcp request failed: the database cannot be reached"),
          errorBody(503, "unavailable", DATABASE_UNAVAILABLE, { "retry-after": String(DATABASE_RETRY_AFTER_SECONDS) })
        )
        : Effect.as(
          Effect.logError("mcp request failed", defect),
          errorBody(500, "internal_error", "the server failed to answer; try again")
        )),
  { global: true }
)

const Registrations = Layer.mergeAll(McpToolsLayer, McpPromptsLayer, McpResourcesLayer).pipe(
  Layer.provide(CallerMiddleware.layer),
  Layer.provide(McpToolHandlers.layer)
)

/**
 * The MCP service's routes: `POST /mcp` and `DELETE /mcp` (the MCP server
 * behind the ApiKey gate, which also counts POSTs against the organization's
 * limits and writes the usage log) and the discovery document. Needs `Organizations`, `VulnStore`,
 * `InferenceLog`, `Invalidation` (guardrails and policies), `SecretBox` and a `SqlClient` from the app layer.
 */
export const McpRoutes: Layer.Layer<
  never,
  Config.ConfigError | Cause.IllegalArgumentError,
  SqlClient.SqlClient | Organizations | VulnStore | InferenceLog | Invalidation | HttpRouter.HttpRouter
> = Layer.mergeAll(
  McpServer.layerHttp({
    name: MCP_SERVER_NAME,
    version: MCP_SERVER_VERSION,
    instructions:
      "Vulnerability intelligence (records, exploits, KEV, EPSS, CVSS, SSVC) and AI-gateway firewall tools for the calling organization. Identifiers may be given in any form (CVE, GHSA, OSV, EUVD). Lists page with `cursor`.",
    path: MCP_PATH,
    protocols: MCP_PROTOCOLS,
    // The library keeps every session until the process ends; DELETE is the one way to free one.
    allowSessionTermination: true,
    // `subscriptions/listen` (2026-07-28) would hold a stream, and its whole request, open for as
    // long as the client likes, with no cap: nothing here changes at run time to notify of.
    allowSubscriptions: false,
    registrations: Registrations
  }).pipe(Layer.provide(McpGate.layer), Layer.provide(ApiKeyAuth.layer)),
  discovery,
  health,
  fallback,
  failures
).pipe(
  Layer.provide([Guardrails.layer, Policies.layer, Nonces.layer, RateLimiter.layer, UsageLog.layer])
)
