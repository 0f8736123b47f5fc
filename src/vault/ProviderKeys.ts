import type { Redacted } from "effect"
import { Context, Effect, Layer } from "effect"
import type { BackendUnavailable } from "../cache/BackendUnavailable.ts"
import { keyCacheTtl } from "../cache/KeyCacheTtl.ts"
import { Invalidation } from "../db/Invalidation.ts"
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
  /**
   * For a value that changes as it is used (a Kiro sign-in, whose refresh token the provider
   * rotates): runs `f` with the value stored now, read past this process's cache, holding the
   * row's lease, which every process of the database respects (one holder at a time; others wait
   * for it to end, or to expire if its holder stopped). What `f` asks to store is written only if
   * the row still holds the value `f` was given, so a key deleted or replaced meanwhile stays so,
   * and is then published. If that write fails, `f`'s result still stands and the failure is logged.
   */
  exclusive<A, E>(
    orgUuid: string,
    provider: string,
    f: (
      stored: Redacted.Redacted<string> | undefined
    ) => Effect.Effect<readonly [A, Redacted.Redacted<string> | undefined], E>
  ): Effect.Effect<A, E | ProviderKeyUnreadable | BackendUnavailable>
}>()("vdb/vault/ProviderKeys") {
  static readonly layer = Layer.effect(
    ProviderKeys,
    Effect.gen(function*() {
      return ProviderKeys.of(
        yield* makeProviderKeys({
          store: yield* sqlProviderKeyStore,
          box: yield* SecretBox,
          ttl: yield* keyCacheTtl,
          bus: yield* Invalidation
        })
      )
    })
  )

  static readonly layerMemory = Layer.effect(
    ProviderKeys,
    Effect.gen(function*() {
      return ProviderKeys.of(
        yield* makeProviderKeys({
          store: memoryProviderKeyStore(),
          box: yield* SecretBox,
          ttl: yield* keyCacheTtl,
          bus: yield* Invalidation
        })
      )
    })
  )
}
