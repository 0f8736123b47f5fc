import { ConfigProvider, Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { Invalidation } from "../../../src/db/Invalidation.ts"
import { CustomProviders } from "../../../src/providers/custom/CustomProviders.ts"
import { memoryCustomProviderStore } from "../../../src/providers/custom/CustomProviderStore.ts"
import { Resolver } from "../../../src/providers/custom/Resolver.ts"
import { VettingPolicy } from "../../../src/providers/custom/VettingPolicy.ts"
import { ProviderKeys } from "../../../src/vault/ProviderKeys.ts"
import { PostgresTest } from "../../support/database.ts"

const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"

/**
 * Two "processes" (two registries with their own caches) over one store and
 * one invalidation bus, with a cache TTL of a minute: only the bus can explain
 * a change being seen at once.
 */
describe("custom provider cache", () => {
  it("a registration or removal in one process is seen by the other's next lookup", async () => {
    const store = memoryCustomProviderStore()
    const registry = CustomProviders.layerMemoryFrom(store).pipe(
      Layer.provide([
        Resolver.layerFrom(() => undefined),
        VettingPolicy.layer,
        Layer.mock(ProviderKeys)({ remove: () => Effect.succeed(false) }),
        ConfigProvider.layer(ConfigProvider.fromUnknown({ VDB_GATEWAY_KEY_CACHE_TTL: "60" }))
      ])
    )
    const program = Effect.gen(function*() {
      // `Layer.fresh`: two instances, as two processes would have.
      const a = yield* Layer.build(Layer.fresh(registry))
      const b = yield* Layer.build(Layer.fresh(registry))
      const first = a.mapUnsafe.get(CustomProviders.key) as CustomProviders["Service"]
      const second = b.mapUnsafe.get(CustomProviders.key) as CustomProviders["Service"]
      expect(first).not.toBe(second)

      expect(yield* second.lookup(ORG, "acme-llm")).toBeUndefined()
      yield* first.add(ORG, { slug: "acme-llm", base_url: "https://93.184.216.34/v1", surfaces: ["messages"] })
      const route = yield* second.lookup(ORG, "acme-llm")
      expect(route?.upstreamPaths).toEqual({ messages: "/v1/messages", count_tokens: "/v1/messages/count_tokens" })
      expect(route?.custom).toEqual({ hostname: "93.184.216.34", host: "93.184.216.34", port: 443 })
      // Another organization's lookup of the slug misses, exactly like an unknown slug.
      expect(yield* second.lookup("0b0e6d8a-1111-4c5b-8e7f-0a1b2c3d4e5f", "acme-llm")).toBeUndefined()

      yield* first.remove(ORG, "acme-llm")
      expect(yield* second.lookup(ORG, "acme-llm")).toBeUndefined()
    })
    await Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(Invalidation.layerMemory)))
  })

  it("never queries the store for a malformed organization or slug", async () => {
    let reads = 0
    const store = memoryCustomProviderStore()
    const counting = { ...store, list: (org: string) => Effect.suspend(() => (reads++, store.list(org))) }
    const layer = CustomProviders.layerMemoryFrom(counting).pipe(
      Layer.provide([
        Resolver.layerFrom(() => undefined),
        VettingPolicy.layer,
        Layer.mock(ProviderKeys)({}),
        Invalidation.layerMemory,
        ConfigProvider.layer(ConfigProvider.fromUnknown({}))
      ])
    )
    await Effect.runPromise(
      Effect.gen(function*() {
        const providers = yield* CustomProviders
        expect(yield* providers.lookup("not-a-uuid", "x")).toBeUndefined()
        expect(yield* providers.lookup(ORG, "Not A Slug")).toBeUndefined()
        expect(yield* providers.lookup(undefined, "x")).toBeUndefined()
        expect(reads).toBe(0)
        yield* providers.lookup(ORG, "x")
        yield* providers.lookup(ORG, "y")
        expect(reads).toBe(1)
      }).pipe(Effect.provide(layer))
    )
  })

  it("on PostgreSQL, a change made by one process reaches another's cache through LISTEN/NOTIFY", async () => {
    // Each "process": its own registry, cache and LISTEN session, over one database; a TTL of a minute.
    const instance = () =>
      CustomProviders.layer.pipe(
        Layer.provide([
          Layer.fresh(Invalidation.layerPostgres),
          Resolver.layerFrom(() => undefined),
          VettingPolicy.layer,
          Layer.mock(ProviderKeys)({ remove: () => Effect.succeed(false) }),
          ConfigProvider.layer(ConfigProvider.fromUnknown({ VDB_GATEWAY_KEY_CACHE_TTL: "60" }))
        ]),
        Layer.fresh
      )
    const program = Effect.gen(function*() {
      const first = (yield* Layer.build(instance())).mapUnsafe.get(CustomProviders.key) as CustomProviders["Service"]
      const second = (yield* Layer.build(instance())).mapUnsafe.get(CustomProviders.key) as CustomProviders["Service"]
      expect(yield* second.lookup(ORG, "acme-llm")).toBeUndefined()
      yield* first.add(ORG, { slug: "acme-llm", base_url: "https://93.184.216.34/v1", surfaces: ["chat"] })
      // NOTIFY arrives asynchronously: wait for it (bounded by the test timeout), never for the minute-long TTL.
      while ((yield* second.lookup(ORG, "acme-llm")) === undefined) yield* Effect.sleep("10 millis")
      yield* first.remove(ORG, "acme-llm")
      while ((yield* second.lookup(ORG, "acme-llm")) !== undefined) yield* Effect.sleep("10 millis")
    })
    await Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(PostgresTest)))
  }, 30_000)
})
