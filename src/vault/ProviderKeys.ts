import type { Redacted } from "effect"
import { Context, Effect, Layer } from "effect"
import { Invalidation } from "../db/Invalidation.ts"
import { keyCacheTtl } from "../gateway/keys/KeyCacheTtl.ts"
import type { BackendUnavailable } from "../gateway/keys/ServiceKeyErrors.ts"
import { SecretBox } from "../secrets/SecretBox.ts"
import { makeProviderKeys } from "./CachedProviderKeys.ts"
import type { ProviderKeyMissing, ProviderKeyUnreadable } from "./ProviderKeyErrors.ts"
import type { ProviderKeyEntry } from "./ProviderKeyStore.ts"
import { memoryProviderKeyStore, sqlProviderKeyStore } from "./ProviderKeyStore.ts"

export { ProviderKeyMissing, ProviderKeyUnreadable } from "./ProviderKeyErrors.ts"
export type { ProviderKeyEntry } from "./ProviderKeyStore.ts"

/**
 * The provider-key vault: one key per provider per organization, sealed with
 * the master key (bound to its organization and provider), opened just in
 * time, never logged or returned by any admin operation. An opened key is
 * kept per process, inside a `Redacted`, until a change to it is published
 * on the invalidation bus, and at most `VDB_GATEWAY_KEY_CACHE_TTL` (default
 * 30 s, at most 60 s; why: see `CachedProviderKeys.ts`).
 */
export class ProviderKeys extends Context.Service<ProviderKeys, {
  get(
    orgUuid: string,
    provider: string
  ): Effect.Effect<Redacted.Redacted<string>, ProviderKeyMissing | ProviderKeyUnreadable | BackendUnavailable>
  set(orgUuid: string, provider: string, key: Redacted.Redacted<string>): Effect.Effect<void>
  remove(orgUuid: string, provider: string): Effect.Effect<boolean>
  /** Providers and timestamps only. */
  list(orgUuid: string): Effect.Effect<ReadonlyArray<ProviderKeyEntry>>
}>()("vdb/vault/ProviderKeys") {
  static readonly layer = Layer.effect(
    ProviderKeys,
    Effect.gen(function*() {
      return ProviderKeys.of(yield* makeProviderKeys({
        store: yield* sqlProviderKeyStore,
        box: yield* SecretBox,
        ttl: yield* keyCacheTtl,
        bus: yield* Invalidation
      }))
    })
  )

  static readonly layerMemory = Layer.effect(
    ProviderKeys,
    Effect.gen(function*() {
      return ProviderKeys.of(yield* makeProviderKeys({
        store: memoryProviderKeyStore(),
        box: yield* SecretBox,
        ttl: yield* keyCacheTtl,
        bus: yield* Invalidation
      }))
    })
  )
}
