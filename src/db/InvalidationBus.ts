import { Effect, type Scope } from "effect"

/** What a cache keeps that a write elsewhere can make stale: one channel each. */
export const INVALIDATION_CHANNELS = [
  "organization",
  "service-key",
  "provider-key",
  "guardrail-rules",
  "gateway-policies",
  "inference-settings",
  "custom-provider",
  "vuln-records"
] as const

export type InvalidationChannel = typeof INVALIDATION_CHANNELS[number]

/**
 * One key changed, or (after a lost connection to the bus) anything may have:
 * `All` tells a cache to drop everything it holds.
 */
export type Invalidated =
  | { readonly _tag: "Key"; readonly key: string }
  | { readonly _tag: "All" }

export type Evict = (event: Invalidated) => Effect.Effect<void>

export interface InvalidationBus {
  /**
   * Whether this process hears every change now. False while its PostgreSQL listening session is
   * down (lost, reconnecting): nobody waits for it then and it would miss changes, so the caches
   * neither serve nor keep entries (they read the database) until it listens again.
   */
  live(): boolean
  publish(channel: InvalidationChannel, key: string): Effect.Effect<void>
  /** Runs `evict` on every invalidation of `channel` while the scope is open; registered before it returns. */
  subscribe(channel: InvalidationChannel, evict: Evict): Effect.Effect<void, never, Scope.Scope>
}

/**
 * The bus within one process: a publish runs this process's evictions before it returns. Alone it
 * is the whole bus (PGlite, tests); PostgreSQL's bus delivers what other processes publish through it.
 */
export const makeLocalBus = () => {
  const subscribers = new Map<InvalidationChannel, Set<Evict>>()
  const deliver = (channel: InvalidationChannel, event: Invalidated) => {
    const set = subscribers.get(channel)
    if (set === undefined || set.size === 0) return Effect.void
    return Effect.forEach(set, (evict) => evict(event), { discard: true })
  }
  const deliverAll = Effect.suspend(() =>
    Effect.forEach(subscribers.keys(), (channel) => deliver(channel, { _tag: "All" }), { discard: true })
  )
  const subscribe = (channel: InvalidationChannel, evict: Evict) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        let set = subscribers.get(channel)
        if (set === undefined) subscribers.set(channel, set = new Set())
        // A wrapper per subscription, so the same function subscribed twice is released twice.
        const entry: Evict = (event) => evict(event)
        set.add(entry)
        return entry
      }),
      (entry) => Effect.sync(() => subscribers.get(channel)?.delete(entry))
    ).pipe(Effect.asVoid)
  const bus: InvalidationBus = {
    live: () => true,
    publish: (channel, key) => deliver(channel, { _tag: "Key", key }),
    subscribe
  }
  return { bus, deliver, deliverAll }
}
