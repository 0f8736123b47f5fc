import { Effect, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import type { CustomProviders } from "../../../src/providers/custom/CustomProviders.ts"
import { storeProviderKey } from "../../../src/providers/custom/KnownProvider.ts"
import type { ProviderKeys } from "../../../src/vault/ProviderKeys.ts"

/**
 * `storeProviderKey` (src/providers/custom/KnownProvider.ts) against the interleaving that left a key
 * behind its provider: the provider was checked and found, then removed with its key, and only
 * then was the key written. The stores here are maps; `set` runs the removal first, as that race did.
 */
const ORG = "0b7c1e52-3f4a-4d6b-9c8e-1a2b3c4d5e6f"

const world = (removeBeforeWrite: boolean) => {
  const providers = new Set(["acme-llm"])
  const keys = new Map<string, string>()
  const custom = {
    registered: (_org: string, slug: string) => Effect.sync(() => providers.has(slug))
  } as unknown as CustomProviders["Service"]
  const providerKeys = {
    set: (_org: string, slug: string, key: Redacted.Redacted<string>) =>
      Effect.sync(() => {
        if (removeBeforeWrite) {
          providers.delete(slug)
          keys.delete(slug)
        }
        keys.set(slug, Redacted.value(key))
      }),
    remove: (_org: string, slug: string) => Effect.sync(() => keys.delete(slug))
  } as unknown as ProviderKeys["Service"]
  return {
    keys,
    store: (slug: string) => Effect.runSync(storeProviderKey(custom, providerKeys, ORG, slug, Redacted.make("sk-1")))
  }
}

describe("storeProviderKey", () => {
  it("a key written after its custom provider was removed is taken out again, and reported", () => {
    const { keys, store } = world(true)
    expect(store("acme-llm")).toBe(false)
    expect([...keys.keys()]).toEqual([])
  })

  it("a key of a provider still registered, or of a built-in one, is kept", () => {
    const { keys, store } = world(false)
    expect(store("acme-llm")).toBe(true)
    expect(store("openai")).toBe(true)
    expect([...keys.keys()].sort()).toEqual(["acme-llm", "openai"])
  })
})
