import { ConfigProvider, Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { builtinProviders } from "../../src/providers/catalog/index.ts"
import { ProviderCatalog } from "../../src/providers/ProviderCatalog.ts"

describe("provider catalog", () => {
  it("has the 13 slugs of spec 2 and its surface matrix", () => {
    expect(builtinProviders.map((p) => p.slug).sort()).toEqual([
      "alibaba",
      "anthropic",
      "deepseek",
      "fireworks",
      "groq",
      "kiro",
      "minimax",
      "mistral",
      "moonshot",
      "openai",
      "openrouter",
      "together",
      "xai"
    ])
    const surfaces = Object.fromEntries(builtinProviders.map((p) => [p.slug, [...p.surfaces].sort()]))
    expect(surfaces.openai).toEqual(["chat", "responses"])
    expect(surfaces.anthropic).toEqual(["messages"])
    expect(surfaces.kiro).toEqual(["kiro"])
    for (
      const slug of [
        "openrouter",
        "groq",
        "mistral",
        "deepseek",
        "xai",
        "together",
        "fireworks",
        "alibaba",
        "moonshot",
        "minimax"
      ]
    ) {
      expect(surfaces[slug]).toEqual(["chat"])
    }
    for (const provider of builtinProviders) {
      for (const surface of provider.surfaces) expect(provider.paths[surface]).toBeDefined()
      expect(provider.models.length).toBeGreaterThan(0)
    }
  })

  it("takes base URLs from VDB_PROVIDER_<SLUG>_BASE_URL", async () => {
    const config = ConfigProvider.layer(ConfigProvider.fromUnknown({
      VDB_PROVIDER_OPENAI_BASE_URL: "http://127.0.0.1:9000/v1",
      VDB_PROVIDER_ANTHROPIC_BASE_URL: "http://127.0.0.1:9000"
    }))
    const catalog = await Effect.runPromise(
      Effect.gen(function*() {
        return yield* ProviderCatalog
      }).pipe(Effect.provide(ProviderCatalog.layer.pipe(Layer.provide(config))))
    )
    const openai = catalog.lookup("openai")!
    expect(openai.origin).toBe("http://127.0.0.1:9000")
    expect(openai.upstreamPaths.chat).toBe("/v1/chat/completions")
    expect(catalog.lookup("anthropic")!.upstreamPaths.count_tokens).toBe("/v1/messages/count_tokens")
    expect(catalog.lookup("groq")!.origin).toBe("https://api.groq.com")
    expect(catalog.lookup("groq")!.upstreamPaths.chat).toBe("/openai/v1/chat/completions")
    expect(catalog.lookup("nope")).toBeUndefined()
  })
})
