import { Duration, Effect } from "effect"
import type { BackendUnavailable } from "../cache/BackendUnavailable.ts"
import { isOrgUuid, makeKeyCache } from "../cache/KeyCache.ts"
import type { InvalidationBus } from "../db/InvalidationBus.ts"
import type { Organizations } from "../orgs/Organizations.ts"
import { OrgUnknown, ServiceKeyExists } from "./ServiceKeyErrors.ts"
import { generateServiceKey, isServiceKeyShaped, serviceKeyVerifier, verifierMatches } from "./ServiceKeyFormat.ts"
import type { ServiceKeyStore } from "./ServiceKeyStore.ts"

export type ServiceKeyCheck = "valid" | "invalid"

/** What one process believes about an organization until a change is published (at most one TTL if one is lost). */
interface OrgKeyState {
  readonly active: boolean
  readonly verifier: Buffer | undefined
}

const INVALID = Effect.succeed<ServiceKeyCheck>("invalid")

/**
 * Service-key verification with a per-process cache of each organization's
 * state (active flag + verifier), keyed by organization rather than by
 * (organization, presented key): a hit needs no database round trip either
 * way, and a flood of wrong keys for one organization cannot evict real
 * entries. Only successful reads are cached; a failed read is retried on the
 * next request, and any failure (SQL error, timeout, defect) fails closed.
 * An organization change or a key change published by any process evicts
 * the entry at once; the TTL only bounds a lost notification.
 */
export const makeServiceKeys = Effect.fnUntraced(function*(options: {
  readonly store: ServiceKeyStore
  readonly orgs: Organizations["Service"]
  readonly ttl: Duration.Duration
  readonly bus: InvalidationBus
}) {
  const { bus, orgs, store, ttl } = options

  const orgActive = (orgUuid: string) =>
    orgs.show(orgUuid).pipe(
      Effect.map((org) => org.isActive),
      Effect.catchTag("OrgError", () => Effect.succeed(false))
    )

  const cache = yield* makeKeyCache({
    what: "service-key",
    backend: "authentication",
    read: (orgUuid) =>
      Effect.all([orgActive(orgUuid), store.verifierOf(orgUuid)], { concurrency: 2 }).pipe(
        Effect.map(([active, verifier]): OrgKeyState => ({ active, verifier }))
      ),
    ttl,
    bus,
    channels: ["organization", "service-key"],
    publishOn: "service-key"
  })

  const verify = (orgUuid: string, presentedKey: string): Effect.Effect<ServiceKeyCheck, BackendUnavailable> => {
    // Shape checks first: a provider key, a malformed UUID or junk never reaches the database.
    if (!isOrgUuid(orgUuid) || !isServiceKeyShaped(presentedKey)) return INVALID
    const presented = serviceKeyVerifier(presentedKey)
    return Effect.map(
      cache.get(orgUuid.toLowerCase()),
      (state): ServiceKeyCheck =>
        state.active && state.verifier !== undefined && verifierMatches(presented, state.verifier)
          ? "valid"
          : "invalid"
    )
  }

  const write = Effect.fnUntraced(function*(orgUuid: string, mode: "create" | "replace") {
    const org = yield* orgs.show(orgUuid).pipe(Effect.mapError(() => new OrgUnknown({ uuid: orgUuid })))
    const key = generateServiceKey()
    const written = yield* store.put(org.uuid, serviceKeyVerifier(key), mode)
    if (!written) return yield* new ServiceKeyExists({ uuid: org.uuid })
    yield* cache.changed(org.uuid)
    return { key }
  })

  const issue = Effect.fn("ServiceKeys.issue")(function*(orgUuid: string) {
    return yield* write(orgUuid, "replace").pipe(
      Effect.catchTag("ServiceKeyExists", (e) => Effect.die(e))
    )
  })

  const create = Effect.fn("ServiceKeys.create")((orgUuid: string) => write(orgUuid, "create"))

  const revoke = Effect.fn("ServiceKeys.revoke")(function*(orgUuid: string) {
    const org = yield* orgs.show(orgUuid).pipe(Effect.mapError(() => new OrgUnknown({ uuid: orgUuid })))
    const removed = yield* store.remove(org.uuid)
    if (removed) yield* cache.changed(org.uuid)
    return removed
  })

  return { verify, issue, create, revoke }
})
