import { Effect } from "effect"
import { GatewayUnknownProvider, UnsupportedApi, UnsupportedKiroApi } from "../../schema/GatewayError.ts"
import { spanWhenTraced, TracingOn } from "../observability/Tracing.ts"
import type { Endpoint } from "../providers/catalog/ProviderSpec.ts"
import type { CustomRoute } from "../providers/custom/CustomProviders.ts"
import { type Provider, ProviderCatalog, routesServing, surfaceOf } from "../providers/ProviderCatalog.ts"
import { ServiceKeys } from "../servicekeys/ServiceKeys.ts"
import { CustomRelay } from "./custom/CustomRelay.ts"
import type { Dialect } from "./dialects/Dialect.ts"
import { authenticate, headerOrg } from "./pipeline/Authenticate.ts"
import type { Exchange } from "./RelayAnswer.ts"

export type HeaderRecord = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/** The path parameters of a gateway route, as `GatewayApi` declares them. */
export interface RouteParams {
  readonly provider: string
  readonly org?: string | undefined
}

/** Where a route finds the organization: the path, the legacy header, or nowhere (always 401). */
export type OrgSource = "path" | "header" | "none"

/** Listings and refusals outside a surface route speak the provider's main surface. */
export const dialectOfProvider = (provider: Provider | undefined): Dialect =>
  provider !== undefined && provider.spec.surfaces[0] === "messages" ? "anthropic" : "openai"

/**
 * What every gateway route checks first: the provider (built in, or the organization's custom one)
 * serves the surface, and the service key is the organization's. Gives the provider, the
 * organization and, for a custom provider, its route.
 */
export const makeAdmission = Effect.gen(function*() {
  const catalog = yield* ProviderCatalog
  const serviceKeys = yield* ServiceKeys
  const custom = yield* CustomRelay
  // With tracing on, the service key's step of a request, before the firewall's.
  const authenticated = spanWhenTraced(yield* TracingOn, "gateway.authenticate")

  /** Provider and surface checks, then authentication: shared by every route. */
  const admit = Effect.fnUntraced(function*(
    exchange: Exchange,
    params: RouteParams,
    headers: HeaderRecord,
    orgSource: OrgSource,
    endpoint: Endpoint | undefined
  ) {
    const slug = params.provider
    const org = orgSource === "path" ? params.org : orgSource === "header" ? headerOrg(headers) : undefined
    const provider = catalog.lookup(slug)
    if (provider === undefined) return yield* admitCustom(exchange, slug, org, headers, endpoint)
    if (endpoint === undefined) exchange.dialect = dialectOfProvider(provider)
    if (endpoint !== undefined && provider.upstreamPaths[endpoint] === undefined) {
      return yield* new UnsupportedApi({ provider: slug, surface: surfaceOf(endpoint), use: routesServing(provider) })
    }
    const orgUuid = yield* authenticated(authenticate(serviceKeys, org, headers))
    return { provider, orgUuid, route: undefined as CustomRoute | undefined }
  })

  /**
   * A slug that is not built in: the named organization's own custom provider. An unknown slug, another
   * organization's slug, and a slug asked for without that organization's key all take this one path (the
   * organization's cached map, then authentication) and end in the same 404: neither the answer, its
   * dialect nor the work done tells whether an organization has the slug.
   */
  const admitCustom = Effect.fnUntraced(function*(
    exchange: Exchange,
    slug: string,
    org: string | undefined,
    headers: HeaderRecord,
    endpoint: Endpoint | undefined
  ) {
    const route = org === undefined ? undefined : yield* custom.lookup(org, slug)
    const orgUuid = yield* authenticated(authenticate(serviceKeys, org, headers)).pipe(
      Effect.catchTag("InvalidApiKey", () => Effect.fail(new GatewayUnknownProvider({ provider: slug })))
    )
    if (route === undefined) return yield* new GatewayUnknownProvider({ provider: slug })
    if (endpoint === undefined) exchange.dialect = dialectOfProvider(route)
    if (endpoint === "kiro") return yield* new UnsupportedKiroApi({ provider: slug })
    if (endpoint !== undefined && route.upstreamPaths[endpoint] === undefined) {
      return yield* new UnsupportedApi({ provider: slug, surface: surfaceOf(endpoint), use: routesServing(route) })
    }
    return { provider: route as Provider, orgUuid, route: route as CustomRoute | undefined }
  })

  return admit
})
