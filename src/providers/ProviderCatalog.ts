import { Config, Context, Effect, Layer } from "effect"
import type { Surface } from "../../schema/GatewayRequest.ts"
import { builtinProviders } from "./catalog/index.ts"
import type { Endpoint, ProviderSpec } from "./catalog/ProviderSpec.ts"

/** A provider with its upstream resolved once, so requests only concatenate strings. */
export interface Provider {
  readonly spec: ProviderSpec
  readonly slug: string
  /** `scheme://host:port` of the upstream. */
  readonly origin: string
  /** Upstream path (without query) per endpoint served. */
  readonly upstreamPaths: Partial<Record<Endpoint, string>>
}

export const surfaceOf = (endpoint: Endpoint): Surface => endpoint === "count_tokens" ? "messages" : endpoint

/** The gateway route of each surface, for `unsupported_api` messages. */
const surfaceRoutes: Record<Surface, string> = {
  chat: "/v1/chat/completions",
  responses: "/v1/responses",
  messages: "/v1/messages",
  kiro: "/v1/generateAssistantResponse"
}

/** "POST /anthropic/{org}/v1/messages", or several joined with " or ". */
export const routesServing = (provider: Provider): string =>
  provider.spec.surfaces.map((surface) => `POST /${provider.slug}/{org}${surfaceRoutes[surface]}`).join(" or ")

export const resolveProvider = (spec: ProviderSpec, baseUrl: string): Provider => {
  const url = new URL(baseUrl)
  const basePath = url.pathname.replace(/\/+$/, "")
  const upstreamPaths: Partial<Record<Endpoint, string>> = {}
  for (const [endpoint, path] of Object.entries(spec.paths) as Array<[Endpoint, string]>) {
    upstreamPaths[endpoint] = basePath + path
  }
  return { spec, slug: spec.slug, origin: url.origin, upstreamPaths }
}

/** `VDB_PROVIDER_<SLUG>_BASE_URL`, e.g. `VDB_PROVIDER_OPENAI_BASE_URL=http://127.0.0.1:9000/v1`. */
export const baseUrlConfig = (spec: ProviderSpec) =>
  Config.URL(`VDB_PROVIDER_${spec.slug.toUpperCase()}_BASE_URL`).pipe(
    Config.map((url) => url.toString()),
    Config.withDefault(spec.baseUrl)
  )

/**
 * The built-in providers. An organization's own providers live in
 * `src/providers/custom/` and are looked up (by organization and slug) only
 * when a slug is not here, so built-in routes pay nothing for them.
 */
export class ProviderCatalog extends Context.Service<ProviderCatalog, {
  lookup(slug: string): Provider | undefined
  readonly all: ReadonlyArray<Provider>
}>()("vdb/gateway/ProviderCatalog") {
  static readonly fromProviders = (providers: ReadonlyArray<Provider>) => {
    const bySlug = new Map(providers.map((provider) => [provider.slug, provider]))
    return ProviderCatalog.of({ lookup: (slug) => bySlug.get(slug), all: providers })
  }

  static readonly layer = Layer.effect(ProviderCatalog)(Effect.gen(function*() {
    const providers: Array<Provider> = []
    for (const spec of builtinProviders) {
      providers.push(resolveProvider(spec, yield* baseUrlConfig(spec)))
    }
    return ProviderCatalog.fromProviders(providers)
  }))
}
