import { type Duration, Effect, type Scope } from "effect"
import type { InvalidationBus, InvalidationChannel } from "../db/InvalidationBus.ts"
import { type BackendCache, makeBackendCache } from "./BackendCache.ts"
import { BackendUnavailable } from "./BackendUnavailable.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Whether `orgUuid` is shaped like an organization's UUID: anything else is refused before it reaches the database. */
export const isOrgUuid = (orgUuid: string): boolean => UUID.test(orgUuid)

/**
 * An organization's keys (service keys, provider keys) as a process caches
 * them: a `BackendCache` evicted by `channels`, whose writes are published on
 * `publishOn` so every process drops its copy at once (the TTL only bounds a
 * lost notification), failing closed with `unavailable`.
 */
export interface KeyCache<A> extends BackendCache<A> {
  readonly unavailable: BackendUnavailable
  /** Publishes a change to `key` (lower case) to every process. */
  changed(key: string): Effect.Effect<void>
}

export const makeKeyCache = <A, R>(options: {
  readonly what: string
  readonly backend: BackendUnavailable["backend"]
  readonly read: (key: string) => Effect.Effect<A, unknown, R>
  readonly ttl: Duration.Duration
  readonly bus: InvalidationBus
  readonly channels: ReadonlyArray<InvalidationChannel>
  readonly publishOn: InvalidationChannel
}): Effect.Effect<KeyCache<A>, never, R | Scope.Scope> =>
  Effect.gen(function*() {
    const { bus, publishOn } = options
    const unavailable = new BackendUnavailable({ backend: options.backend })
    const cache = yield* makeBackendCache({
      what: options.what,
      read: options.read,
      unavailable,
      ttl: options.ttl,
      bus,
      channels: options.channels
    })
    return { ...cache, unavailable, changed: (key) => bus.publish(publishOn, key) }
  })
