import { Context, Effect, Layer } from "effect"
import type { BackendUnavailable } from "../cache/BackendUnavailable.ts"
import { keyCacheTtl } from "../cache/KeyCacheTtl.ts"
import { Invalidation } from "../db/Invalidation.ts"
import { Organizations } from "../orgs/Organizations.ts"
import { makeServiceKeys, type ServiceKeyCheck } from "./CachedServiceKeys.ts"
import type { OrgUnknown, ServiceKeyExists } from "./ServiceKeyErrors.ts"
import { memoryServiceKeyStore, sqlServiceKeyStore } from "./ServiceKeyStore.ts"

export { BackendUnavailable } from "../cache/BackendUnavailable.ts"
export type { ServiceKeyCheck } from "./CachedServiceKeys.ts"
export { OrgUnknown, ServiceKeyExists } from "./ServiceKeyErrors.ts"

/**
 * Each organization's gateway service API key (`vdb_sk_...`). Only a verifier
 * (SHA-256) is stored, never the key; issuing or rotating returns the key once.
 * Verification caches each organization's state until a key or organization
 * change is published on the invalidation bus (any process: at once), and at
 * most `VDB_GATEWAY_KEY_CACHE_TTL` (default 30 s, at most 60 s) should a
 * notification be lost.
 */
export class ServiceKeys extends Context.Service<ServiceKeys, {
  /**
   * "invalid" for a wrong key, an unknown, malformed or inactive organization,
   * or anything that is not shaped like a service key (a provider key).
   * Fails with `BackendUnavailable` when the database cannot be reached (the gateway answers 503).
   */
  verify(orgUuid: string, presentedKey: string): Effect.Effect<ServiceKeyCheck, BackendUnavailable>
  /** Issues a key, replacing any current one immediately (rotation). */
  issue(orgUuid: string): Effect.Effect<{ readonly key: string }, OrgUnknown>
  /** Issues the first key; fails with `ServiceKeyExists` when the organization already has one. */
  create(orgUuid: string): Effect.Effect<{ readonly key: string }, OrgUnknown | ServiceKeyExists>
  /** Removes the key; the organization is then refused until a new key is issued. */
  revoke(orgUuid: string): Effect.Effect<boolean, OrgUnknown>
}>()("vdb/gateway/ServiceKeys") {
  static readonly layer = Layer.effect(
    ServiceKeys,
    Effect.gen(function*() {
      return ServiceKeys.of(
        yield* makeServiceKeys({
          store: yield* sqlServiceKeyStore,
          orgs: yield* Organizations,
          ttl: yield* keyCacheTtl,
          bus: yield* Invalidation
        })
      )
    })
  )

  static readonly layerMemory = Layer.effect(
    ServiceKeys,
    Effect.gen(function*() {
      return ServiceKeys.of(
        yield* makeServiceKeys({
          store: memoryServiceKeyStore(),
          orgs: yield* Organizations,
          ttl: yield* keyCacheTtl,
          bus: yield* Invalidation
        })
      )
    })
  )
}
