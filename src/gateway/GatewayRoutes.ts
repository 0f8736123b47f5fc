import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { GatewayHandlers } from "./GatewayHandlers.ts"
import { Nonces } from "./nonces/Nonces.ts"
import { Inspection } from "./pipeline/Inspection.ts"
import { ProviderCatalog } from "./ProviderCatalog.ts"
import { UpstreamClient } from "./relay/UpstreamClient.ts"

/**
 * The gateway's routes (spec 2), as raw router routes: bodies are never
 * decoded by the framework, so the relay can forward the exact bytes.
 * `GatewayRoutesWith` needs every pipeline service (tests and the benchmark
 * provide fakes); `GatewayRoutes` supplies the gateway's own.
 */
export const GatewayRoutesWith = HttpRouter.use(Effect.fnUntraced(function*(router) {
  const h = yield* GatewayHandlers
  yield* router.add("POST", "/:provider/:org/v1/chat/completions", h.inference("chat", "path"))
  yield* router.add("POST", "/:provider/:org/v1/responses", h.inference("responses", "path"))
  yield* router.add("POST", "/:provider/:org/v1/messages", h.inference("messages", "path"))
  yield* router.add("POST", "/:provider/:org/v1/messages/count_tokens", h.inference("count_tokens", "path"))
  yield* router.add("GET", "/:provider/:org/v1/models", h.models("path"))
  yield* router.add("GET", "/:provider/:org/v1/nonces", h.nonces)
  yield* router.add("POST", "/:provider/:org/v1/generateAssistantResponse", h.kiro)
  yield* router.add("GET", "/:provider/:org/v1/ListAvailableModels", h.kiro)
  // Legacy form: the organization in `X-Organisation-UUID`.
  yield* router.add("POST", "/:provider/v1/chat/completions", h.inference("chat", "header"))
  // No organization in the path: always 401 `invalid_api_key`, in the route's dialect.
  yield* router.add("POST", "/:provider/v1/responses", h.inference("responses", "none"))
  yield* router.add("POST", "/:provider/v1/messages", h.inference("messages", "none"))
  yield* router.add("POST", "/:provider/v1/messages/count_tokens", h.inference("count_tokens", "none"))
  yield* router.add("GET", "/:provider/v1/models", h.models("none"))
  yield* router.add("*", "*", h.fallback)
})).pipe(Layer.provide(Layer.effect(GatewayHandlers)(GatewayHandlers.make)))

/**
 * Mount on the gateway port (with `/healthz` and `/readyz`). Needs
 * `ServiceKeys`, `ProviderKeys`, `Organizations`, `InferenceLog` (one per
 * process, shared with the admin RPCs) and a `SqlClient`.
 * Inspection is allow-all until the policy and guardrail issue replaces it here.
 */
export const GatewayRoutes = GatewayRoutesWith.pipe(
  Layer.provide([
    ProviderCatalog.layer,
    UpstreamClient.layer,
    Inspection.allowAll,
    Nonces.layer
  ])
)
