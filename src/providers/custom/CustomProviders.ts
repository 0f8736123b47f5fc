import { Context, Duration, Effect, Layer } from "effect"
import { makeBackendCache } from "../../cache/BackendCache.ts"
import { BackendUnavailable } from "../../cache/BackendUnavailable.ts"
import { keyCacheTtl } from "../../cache/KeyCacheTtl.ts"
import { Invalidation } from "../../db/Invalidation.ts"
import type { InvalidationBus } from "../../db/InvalidationBus.ts"
import { ProviderKeys } from "../../vault/ProviderKeys.ts"
import type { Endpoint, ProviderSpec } from "../catalog/ProviderSpec.ts"
import { type Provider, resolveProvider } from "../ProviderCatalog.ts"
import { parseAddress } from "./AddressVetting.ts"
import {
  type CustomProvider,
  CustomProviderError,
  CustomProviderInvalid,
  CustomProviderNotFound,
  type NewCustomProvider
} from "./CustomProvider.ts"
import { parseAuth, SLUG, validateRegistration } from "./CustomProviderRules.ts"
import { type CustomProviderStore, memoryCustomProviderStore, sqlCustomProviderStore } from "./CustomProviderStore.ts"
import { type HostVetting, makeHostVetting } from "./VettingPolicy.ts"

/** A custom provider as the request path uses it: a catalog `Provider` plus where its address is vetted. */
export interface CustomRoute extends Provider {
  readonly custom: {
    /** `URL.hostname`: a name, or an address literal (IPv6 in brackets). */
    readonly hostname: string
    /** `URL.host`: what the `Host` header carries. */
    readonly host: string
    readonly port: number
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const PATHS: Record<Exclude<Endpoint, "kiro">, string> = {
  chat: "/chat/completions",
  responses: "/responses",
  messages: "/messages",
  count_tokens: "/messages/count_tokens"
}

/** The stored row as a catalog provider, built once per cache fill. */
export const routeOf = (row: CustomProvider): CustomRoute => {
  const paths: Partial<Record<Endpoint, string>> = {}
  for (const surface of row.surfaces) {
    paths[surface] = PATHS[surface]
    if (surface === "messages") paths.count_tokens = PATHS.count_tokens
  }
  const spec: ProviderSpec = {
    slug: row.slug,
    displayName: row.slug,
    baseUrl: row.base_url,
    surfaces: row.surfaces,
    paths,
    auth: parseAuth(row.auth) ?? { _tag: "Bearer" },
    defaultHeaders: row.default_headers,
    // Listing never calls a provider (spec 2): a custom provider has no catalog of models.
    models: []
  }
  const url = new URL(row.base_url)
  return {
    ...resolveProvider(spec, row.base_url),
    custom: { hostname: url.hostname, host: url.host, port: url.port === "" ? 443 : Number(url.port) }
  }
}

const unavailable = new BackendUnavailable({ backend: "provider" })
const refuse = (reason: CustomProviderError["reason"]) => Effect.fail(new CustomProviderError({ reason }))

/**
 * Registration refused by address: one message whether the name does not
 * resolve or resolves to a reserved address, so registering is not a probe of
 * the gateway's internal DNS. A literal names its reason (nothing to hide).
 */
const addressProblem = (url: URL, vet: HostVetting) =>
  vet(url.hostname).pipe(
    Effect.map((verdict) => verdict._tag === "Vetted" ? undefined : verdict.reason),
    Effect.catchTag("ResolveFailed", () => Effect.succeed("does not resolve")),
    Effect.map((reason) => {
      if (reason === undefined) return undefined
      const bare = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
      return parseAddress(bare) !== undefined
        ? `base_url: ${url.hostname} is not a public address (${reason})`
        : `base_url: ${url.hostname} must resolve, and only to public addresses`
    })
  )

export const makeCustomProviders = Effect.fnUntraced(function*(options: {
  readonly store: CustomProviderStore
  readonly ttl: Duration.Duration
  readonly bus: InvalidationBus
  readonly vet: HostVetting
  readonly providerKeys: ProviderKeys["Service"]
}) {
  const { bus, providerKeys, store, ttl, vet } = options

  // One entry per organization (its few providers): an unknown slug and another
  // organization's slug take the same path, a lookup in the caller's own map.
  const cache = yield* makeBackendCache({
    what: "custom-provider",
    read: (org) =>
      Effect.map(
        store.list(org),
        (rows): ReadonlyMap<string, CustomRoute> => new Map(rows.map((row) => [row.slug, routeOf(row)]))
      ),
    unavailable,
    ttl,
    bus,
    channels: ["custom-provider"]
  })

  const lookup = (
    orgUuid: string | undefined,
    slug: string
  ): Effect.Effect<CustomRoute | undefined, BackendUnavailable> =>
    orgUuid === undefined || !UUID.test(orgUuid) || !SLUG.test(slug)
      ? Effect.succeed(undefined)
      : Effect.map(cache.get(orgUuid.toLowerCase()), (routes) => routes.get(slug))

  const add = Effect.fn("CustomProviders.add")(function*(orgUuid: string, input: NewCustomProvider) {
    const org = orgUuid.toLowerCase()
    const checked = validateRegistration(input)
    if (checked instanceof CustomProviderInvalid) return yield* refuse(checked)
    const problem = yield* addressProblem(checked.url, vet)
    if (problem !== undefined) return yield* refuse(new CustomProviderInvalid({ reason: problem }))
    const created = yield* store.insert(org, checked.row)
    if (created === undefined) {
      return yield* refuse(
        new CustomProviderInvalid({ reason: `slug ${JSON.stringify(input.slug)} is already registered` })
      )
    }
    // A key left from an earlier provider of the same slug must not reach a new endpoint.
    yield* providerKeys.remove(org, created.slug)
    yield* bus.publish("custom-provider", org)
    return created
  })

  const remove = Effect.fn("CustomProviders.remove")(function*(orgUuid: string, slug: string) {
    const org = orgUuid.toLowerCase()
    if (!(yield* store.remove(org, slug))) return yield* refuse(new CustomProviderNotFound({ slug }))
    yield* providerKeys.remove(org, slug)
    yield* bus.publish("custom-provider", org)
  })

  const list = Effect.fn("CustomProviders.list")((orgUuid: string) => store.list(orgUuid.toLowerCase()))

  const registered = (orgUuid: string, slug: string) =>
    Effect.map(store.list(orgUuid.toLowerCase()), (rows) => rows.some((row) => row.slug === slug))

  return { lookup, add, remove, list, registered }
})

/**
 * Each organization's custom providers (spec 2, Resources): registered with
 * their address vetted, listed, removed (with their vault key), and looked up
 * on the request path from a per-process cache that a change anywhere evicts
 * through the invalidation bus (`custom-provider`, keyed by organization),
 * bounded by `VDB_GATEWAY_KEY_CACHE_TTL` should a notification be lost.
 */
export class CustomProviders extends Context.Service<CustomProviders, {
  /** The organization's provider under `slug`; `undefined` for anything else, whoever owns it. */
  lookup(orgUuid: string | undefined, slug: string): Effect.Effect<CustomRoute | undefined, BackendUnavailable>
  add(orgUuid: string, input: NewCustomProvider): Effect.Effect<CustomProvider, CustomProviderError>
  remove(orgUuid: string, slug: string): Effect.Effect<void, CustomProviderError>
  list(orgUuid: string): Effect.Effect<ReadonlyArray<CustomProvider>>
  /** Whether the organization has a provider under `slug` now: read from the store, not the cache. */
  registered(orgUuid: string, slug: string): Effect.Effect<boolean>
}>()("vdb/gateway/custom/CustomProviders") {
  private static build<R>(store: Effect.Effect<CustomProviderStore, never, R>) {
    return Layer.effect(
      CustomProviders,
      Effect.gen(function*() {
        return CustomProviders.of(
          yield* makeCustomProviders({
            store: yield* store,
            ttl: yield* keyCacheTtl,
            bus: yield* Invalidation,
            vet: yield* makeHostVetting,
            providerKeys: yield* ProviderKeys
          })
        )
      })
    )
  }

  /** Needs `SqlClient`, `ProviderKeys`, `Resolver` and `VettingPolicy`. */
  static readonly layer = CustomProviders.build(sqlCustomProviderStore)

  static readonly layerMemory = CustomProviders.build(Effect.sync(memoryCustomProviderStore))

  /** Over a store the test holds, to plant rows registration would refuse (an address that went bad later). */
  static readonly layerMemoryFrom = (store: CustomProviderStore) => CustomProviders.build(Effect.succeed(store))
}
