import { randomBytes } from "node:crypto"
import { PgClient, PgConnection } from "@effect/sql-pg"
import { Cause, Context, Deferred, Effect, Layer, Queue, Schedule, type Scope } from "effect"

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

type Evict = (event: Invalidated) => Effect.Effect<void>

export interface InvalidationBus {
  publish(channel: InvalidationChannel, key: string): Effect.Effect<void>
  /** Runs `evict` on every invalidation of `channel` while the scope is open; registered before it returns. */
  subscribe(channel: InvalidationChannel, evict: Evict): Effect.Effect<void, never, Scope.Scope>
}

/** The single PostgreSQL channel; the payload names the bus channel and key. */
export const NOTIFY_CHANNEL = "vdb_invalidation"

const makeLocalBus = () => {
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
    publish: (channel, key) => deliver(channel, { _tag: "Key", key }),
    subscribe
  }
  return { bus, deliver, deliverAll }
}

const CHANNELS: ReadonlySet<string> = new Set(INVALIDATION_CHANNELS)

const makePostgresBus: Effect.Effect<InvalidationBus, never, PgClient.PgClient | Scope.Scope> = Effect.gen(function*() {
  const pg = yield* PgClient.PgClient
  const local = makeLocalBus()
  // Our own notifications come back through LISTEN; they were delivered locally already.
  const origin = randomBytes(6).toString("hex")
  const listening = yield* Deferred.make<void>()

  const received = (payload: string) => {
    const [from, channel, key] = payload.split("\t", 3)
    if (from === origin || channel === undefined || key === undefined || !CHANNELS.has(channel)) return Effect.void
    return local.deliver(channel as InvalidationChannel, { _tag: "Key", key })
  }

  // Only losing a session that listened is worth a warning: a failed (re)connect
  // attempt is the database being down, which whoever uses it next reports.
  let listened = false
  const session = Effect.scoped(Effect.gen(function*() {
    const connection = yield* PgConnection.make(pg.config)
    const notifications = yield* connection.listen(NOTIFY_CHANNEL)
    // Whatever changed while no session listened is unknown: every cache starts over.
    yield* local.deliverAll
    listened = true
    yield* Deferred.succeed(listening, undefined)
    while (true) yield* received((yield* Queue.take(notifications)).payload)
  }))

  yield* session.pipe(
    Effect.catchCause((cause) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
      const lost = listened
      listened = false
      const log = lost
        ? Effect.logWarning("invalidation listener lost its database session; caches fall back to their TTL until it is back")
        : Effect.logDebug("invalidation listener cannot reach the database yet")
      return log.pipe(
        Effect.annotateLogs("failure", failureMessage(cause)),
        // Start-up waits for the first attempt only, successful or not.
        Effect.andThen(Deferred.succeed(listening, undefined))
      )
    }),
    Effect.repeat(Schedule.min([Schedule.exponential("200 millis"), Schedule.spaced("10 seconds")])),
    Effect.forkScoped
  )
  // Start-up waits (briefly) for LISTEN, so nothing published after the server is up is missed.
  yield* Deferred.await(listening).pipe(Effect.timeout("5 seconds"), Effect.ignore)

  const bus: InvalidationBus = {
    publish: (channel, key) =>
      Effect.andThen(
        local.deliver(channel, { _tag: "Key", key }),
        pg.notify(NOTIFY_CHANNEL, `${origin}\t${channel}\t${key}`).pipe(
          Effect.catchCause((cause) =>
            Effect.logWarning("invalidation not sent; other processes fall back to their cache TTL").pipe(
              Effect.annotateLogs({ channel, failure: failureMessage(cause) })
            )
          )
        )
      ),
    subscribe: local.bus.subscribe
  }
  return bus
})

const failureMessage = (cause: Cause.Cause<unknown>) => {
  const error = Cause.squash(cause)
  return error instanceof Error ? error.message : String(error)
}

/**
 * The invalidation bus: every write that changes something a process caches
 * publishes it here, and every in-process cache subscribes and evicts. On
 * PostgreSQL it is `LISTEN/NOTIFY`, so a change made by one process reaches
 * all of them; on PGlite (one process per data directory) it is in-process.
 *
 * `publish` runs this process's evictions before it returns (the next request
 * here never sees the old value), then tells the other processes. The cache
 * TTL stays only as the fallback for a notification that is lost; a lost
 * LISTEN connection is answered with `All` once it is back.
 *
 * A `Reference` whose default is one in-process bus: a process with a single
 * database has exactly that, and every layer composition (tests included)
 * works unchanged; the PostgreSQL database layer overrides it.
 */
export class Invalidation extends Context.Reference<InvalidationBus>("vdb/db/Invalidation", {
  defaultValue: () => makeLocalBus().bus
}) {
  /** A fresh in-process bus: PGlite, and unit tests that want their own. */
  static readonly layerMemory = Layer.sync(Invalidation, () => makeLocalBus().bus)

  /** PostgreSQL `LISTEN/NOTIFY` on one dedicated session (not a pool slot), reconnecting with backoff. */
  static readonly layerPostgres = Layer.effect(Invalidation, makePostgresBus)
}
