import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApi, HttpApiBuilder, type HttpApiEndpoint, type HttpApiGroup, OpenApi } from "effect/http-api"
import { Guardrails } from "../guardrails/Guardrails.ts"
import { UpstreamClient } from "../http/UpstreamClient.ts"
import { Nonces } from "../nonces/Nonces.ts"
import { Policies } from "../policies/Policies.ts"
import { ProviderCatalog } from "../providers/ProviderCatalog.ts"
import { catchAll } from "../server/RouteFallback.ts"
import type { RouteParams } from "./Admission.ts"
import { CustomRelayLive } from "./custom/CustomRelayLive.ts"
import { AnthropicSurfaces, GatewayApi, KiroSurface, Listings, OpenAiSurfaces } from "./GatewayApi.ts"
import { GatewayHandlers } from "./GatewayHandlers.ts"
import { KiroRelay } from "./kiro/KiroRelay.ts"
import { ManageRoutes } from "./manage/ManageHandlers.ts"
import { FirewallLayer } from "./pipeline/Firewall.ts"
import { toServerResponse } from "./RelayAnswer.ts"
import { type InferenceHandler, type InferenceRoutes, relayListener } from "./RelayListener.ts"

// Kiro's relay mints tokens with the same vault and upstream client as the handlers: no further requirement.
const handlersLayer = Layer.effect(GatewayHandlers)(GatewayHandlers.make).pipe(Layer.provide(KiroRelay.layer))

/**
 * One group's inference handlers, checked by the compiler: every endpoint of
 * the group has one. Mounted on the router (`mountRaw`) and, on the
 * gateway's own server, answered below it (`RelayListener.ts`).
 */
const surface = <Group extends HttpApiGroup.Constraint>(
  group: Group,
  handlers: { readonly [Id in HttpApiGroup.Endpoints<Group>["identifier"]]: InferenceHandler }
): InferenceRoutes => ({ group, handlers })

/** The inference surfaces and their handlers (method and path come from the contract). */
const inferenceRoutes = (h: GatewayHandlers["Service"]): ReadonlyArray<InferenceRoutes> => [
  surface(OpenAiSurfaces, {
    chat: h.inference("chat", "path"),
    responses: h.inference("responses", "path"),
    // Legacy form: the organization in `X-Organisation-UUID`.
    chatLegacy: h.inference("chat", "header"),
    // No organization in the path: always 401 `invalid_api_key`, in the route's dialect.
    responsesNoOrg: h.inference("responses", "none")
  }),
  surface(AnthropicSurfaces, {
    messages: h.inference("messages", "path"),
    countTokens: h.inference("count_tokens", "path"),
    messagesNoOrg: h.inference("messages", "none"),
    countTokensNoOrg: h.inference("count_tokens", "none")
  })
]

/**
 * The inference routes, mounted straight on the router from their
 * `GatewayApi` definitions. Measured (docs/gateway.md, "Benchmark"): serving
 * them through `HttpApiBuilder` took the gateway from 0.95 to 0.69 of the
 * bare relay's throughput (50 to 69 µs of CPU per request), far past the 3 %
 * budget, so only these hot routes bypass it; what they answer is still what
 * the contract declares. On the gateway's own server the same handlers answer
 * them before the router (`RelayListener.ts`); the router answers them on any
 * other server, identically.
 */
const mountRaw = (routes: ReadonlyArray<InferenceRoutes>) =>
  HttpRouter.use(Effect.fnUntraced(function*(router) {
    for (const { group, handlers } of routes) {
      for (const [id, endpoint] of Object.entries(group.endpoints as Record<string, HttpApiEndpoint.Top>)) {
        const handler = handlers[id]!
        yield* router.add(
          endpoint.method as "GET" | "POST",
          endpoint.path as HttpRouter.PathInput,
          (request) =>
            Effect.flatMap(HttpRouter.params, (params) =>
              Effect.map(handler(request, params as unknown as RouteParams), toServerResponse))
        )
      }
    }
  }))

/** The inference surfaces: one set of handlers, on the router and below it. */
const InferenceSurfaces = Layer.unwrap(Effect.map(GatewayHandlers, (h) => {
  const routes = inferenceRoutes(h)
  return Layer.merge(mountRaw(routes), relayListener("gateway", routes))
}))

/** The routes served through `HttpApiBuilder` (raw handlers: every answer is built by `GatewayHandlers`). */
class ServedApi extends HttpApi.make("gateway").add(Listings).add(KiroSurface) {}

const ListingsLive = HttpApiBuilder.group(
  ServedApi,
  "listings",
  Effect.fnUntraced(function*(handlers) {
    const h = yield* GatewayHandlers
    const models = h.models("path")
    const modelsNoOrg = h.models("none")
    return handlers
      .handleRaw("models", ({ params, request }) => models(request, params))
      .handleRaw("modelsNoOrg", ({ params, request }) => modelsNoOrg(request, params))
      .handleRaw("nonces", ({ params, request }) => h.nonces(request, params))
  })
)

const KiroSurfaceLive = HttpApiBuilder.group(
  ServedApi,
  "kiro",
  Effect.fnUntraced(function*(handlers) {
    const h = yield* GatewayHandlers
    return handlers
      .handleRaw("generateAssistantResponse", ({ params, request }) => h.kiro(request, params))
      .handleRaw("listAvailableModels", ({ params, request }) => h.kiroModels(request, params))
  })
)

/** The whole contract's OpenAPI document (inference routes included), built once. */
const OpenApiDocument = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const document = HttpServerResponse.jsonUnsafe(OpenApi.fromApi(GatewayApi))
  yield* router.add("GET", "/openapi.json", Effect.succeed(document))
}))

/** Any other path: `unknown_provider`, `unsupported_api` or `not_found`, in the provider's dialect. */
const Fallback = Layer.unwrap(Effect.gen(function*() {
  const h = yield* GatewayHandlers
  return catchAll("*", h.fallback)
}))

/**
 * The gateway's routes (spec 2), all defined by `GatewayApi`, the OpenAPI
 * document at `/openapi.json`, and the fallback. Bodies are never decoded by
 * the framework, so the relay forwards the exact bytes. `GatewayRoutesWith`
 * needs every pipeline service (tests and the benchmark provide fakes);
 * `GatewayRoutes` supplies the gateway's own.
 */
export const GatewayRoutesWith = Layer.mergeAll(
  InferenceSurfaces,
  HttpApiBuilder.layer(ServedApi).pipe(Layer.provide([ListingsLive, KiroSurfaceLive])),
  OpenApiDocument,
  Fallback
).pipe(Layer.provide(handlersLayer))

/**
 * Mount on the gateway port (with `/healthz` and `/readyz`). Needs
 * `ServiceKeys`, `ProviderKeys`, `Organizations`, `InferenceLog` (one per
 * process, shared with the admin RPCs) and a `SqlClient`.
 * Inspection is the firewall (policies, sealed blocks, strip entries,
 * guardrails); `Policies.layer` and `Guardrails.layer` are the layers the
 * management side uses too, so one build shares one instance of each.
 */
export const GatewayRoutes = Layer.merge(GatewayRoutesWith, ManageRoutes).pipe(
  Layer.provide(FirewallLayer.pipe(Layer.provide([Guardrails.layer, Policies.layer]))),
  Layer.provide([
    ProviderCatalog.layer,
    UpstreamClient.layer,
    Nonces.layer,
    CustomRelayLive
  ])
)
