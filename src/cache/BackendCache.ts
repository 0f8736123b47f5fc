import { Cache, Cause, Duration, Effect, Exit, type Scope } from "effect"
import type { InvalidationBus, InvalidationChannel } from "../db/InvalidationBus.ts"
import type { BackendUnavailable } from "./BackendUnavailable.ts"
import { BACKEND_TIMEOUT, KEY_CACHE_CAPACITY } from "./KeyCacheTtl.ts"

/**
 * What the gateway reads from its backend on the request path (service keys,
 * provider keys, policies, custom providers), cached per process:
 * - a read is bounded by `BACKEND_TIMEOUT`, and any failure but an interruption
 *   is logged (never with the data) and becomes `unavailable`: it fails closed;
 * - only successes are kept, for `ttl`, so a failed read is retried by the next request;
 * - every event on `channels` evicts at once (keys are lower case), in every
 *   process; the TTL only bounds a lost notification;
 * - while the bus is not live (its listening session is reconnecting) nothing is
 *   served from the cache: every request reads.
 */
export interface BackendCache<A> {
  get(key: string): Effect.Effect<A, BackendUnavailable>
  invalidate(key: string): Effect.Effect<void>
}

export const makeBackendCache = <A, R>(options: {
  /** Names the backend in the warning: `gateway <what> backend unavailable`. */
  readonly what: string
  readonly read: (key: string) => Effect.Effect<A, unknown, R>
  readonly unavailable: BackendUnavailable
  readonly ttl: Duration.Duration
  readonly bus: InvalidationBus
  readonly channels: ReadonlyArray<InvalidationChannel>
}): Effect.Effect<BackendCache<A>, never, R | Scope.Scope> =>
  Effect.gen(function*() {
    const warning = `gateway ${options.what} backend unavailable`
    const read = (key: string): Effect.Effect<A, BackendUnavailable, R> =>
      options.read(key).pipe(
        Effect.timeout(BACKEND_TIMEOUT),
        Effect.catchCause((cause) =>
          Cause.hasInterruptsOnly(cause)
            ? Effect.failCause(cause as Cause.Cause<never>)
            : Effect.logWarning(warning).pipe(
              Effect.annotateLogs("failure", String(Cause.squash(cause))),
              Effect.andThen(Effect.fail(options.unavailable))
            )
        )
      )
    const cache = yield* Cache.makeWith(read, {
      capacity: KEY_CACHE_CAPACITY,
      timeToLive: (exit) => Exit.isSuccess(exit) ? options.ttl : Duration.zero
    })
    for (const channel of options.channels) {
      yield* options.bus.subscribe(channel, (event) =>
        event._tag === "All" ? Cache.invalidateAll(cache) : Cache.invalidate(cache, event.key.toLowerCase()))
    }
    const context = yield* Effect.context<R>()
    const bus = options.bus
    return {
      get: (key) =>
        bus.live() ? Cache.get(cache, key) : Effect.provideContext(read(key), context),
      invalidate: (key) => Cache.invalidate(cache, key)
    }
  })
