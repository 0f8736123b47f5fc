import { Config, Duration } from "effect"

/** Even a lost invalidation must not leave a gateway process stale for more than about a minute. */
const MAX_TTL = Duration.seconds(60)

/**
 * How long a gateway process trusts what it read about an organization's keys
 * when no invalidation arrives (changes are published on the invalidation
 * bus and evicted at once; this only bounds a lost notification)
 * (`VDB_GATEWAY_KEY_CACHE_TTL`, e.g. `30 seconds` or plain seconds `30`;
 * default 30 s; `0` disables caching). Values above 60 s are clamped to 60 s so
 * configuration cannot break the propagation bound.
 */
export const keyCacheTtl: Config.Config<Duration.Duration> = Config.Duration("VDB_GATEWAY_KEY_CACHE_TTL").pipe(
  Config.orElse(() => Config.Number("VDB_GATEWAY_KEY_CACHE_TTL").pipe(Config.map(Duration.seconds))),
  Config.withDefault(Duration.seconds(30)),
  Config.map((ttl) => Duration.min(ttl, MAX_TTL))
)

/** Capacity of each per-process key cache; the least recently used entry goes first. */
export const KEY_CACHE_CAPACITY = 10_000

/** A lookup that takes longer than this is treated as an unreachable backend (fail closed, 503). */
export const BACKEND_TIMEOUT = Duration.seconds(5)
