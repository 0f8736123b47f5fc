import { Clock, Config, Context, Effect, Layer, Metric, Schedule, Stream } from "effect"
import { Invalidation } from "../db/Invalidation.ts"
import type { Invalidated } from "../db/InvalidationBus.ts"
import { readTouched, touchKey } from "../vulns/TouchedRecords.ts"
import { VulnStore } from "../vulns/VulnStore.ts"

/** Total bytes the response cache may hold; 0 turns it off. */
export const ResponseCacheBytes = Config.Int("VDB_RESPONSE_CACHE_BYTES").pipe(
  Config.withDefault(256 * 1024 * 1024)
)

/** What a handler built on a miss: the answer, its size in bytes, and every identifier it was built from. */
export interface Built<A> {
  readonly value: A
  readonly bytes: number
  readonly dependsOn: ReadonlyArray<string>
}

export interface Served<A> {
  readonly value: A
  /** Served from the cache (not built by this request). */
  readonly hit: boolean
}

interface Entry {
  readonly key: string
  readonly at: number
  readonly deps: ReadonlyArray<string>
  size: number
  readonly hit: Served<unknown>
}

/** Map, key and dependency bookkeeping per entry, beyond the answer's own bytes. */
const ENTRY_OVERHEAD = 256
const DEPENDENCY_OVERHEAD = 64

/**
 * Only a safety net: an entry older than this is rebuilt, which bounds what a
 * lost notification (a NOTIFY the database refused while the listener stayed
 * connected) could leave stale. Invalidation, not age, keeps entries fresh.
 */
export const MAX_AGE_MILLIS = 10 * 60_000
const SWEEP_MILLIS = 30_000

/**
 * Assembled API answers (`/vuln`, `/info`, `/exploits`) as ready-to-send
 * bytes, least recently used first out, bounded by their total size.
 *
 * Never stale: an entry is dropped as soon as any identifier it was built
 * from (the query, its aliases, its records' identifiers) is touched by a
 * write, in this process (`VulnStore.touched`) or any other (`vuln-records`
 * on the invalidation bus, sent before an ingest acknowledges a batch). A
 * build that overlapped an invalidation is served but not kept: it may have
 * read the rows just before the write committed. `MAX_AGE_MILLIS` is the
 * fallback for a lost notification.
 */
// One metric per outcome, built once: an update then allocates nothing (`withAttributes` adds a context per update).
const cacheRequests = (outcome: string) =>
  Metric.counter("vdb_api_response_cache_requests_total", {
    description: "Lookups of the API's response cache by outcome: hit, or miss (the answer was built)",
    incremental: true,
    attributes: { outcome }
  })
const cacheHits = cacheRequests("hit")
const cacheMisses = cacheRequests("miss")

export class ResponseCache extends Context.Service<ResponseCache, {
  /** The cached answer of `key`, else `build`'s (kept unless it raced a write or the cache is off). */
  serve<A, E, R>(key: string, build: Effect.Effect<Built<A>, E, R>): Effect.Effect<Served<A>, E, R>
  /**
   * The cached answers of `keys` (distinct), the missing ones built together by
   * one call of `build` (given their positions in `keys`, answering in that
   * order) and kept on the same terms as `serve`'s.
   */
  serveMany<A, E, R>(
    keys: ReadonlyArray<string>,
    build: (missing: ReadonlyArray<number>) => Effect.Effect<ReadonlyArray<Built<A>>, E, R>
  ): Effect.Effect<ReadonlyArray<A>, E, R>
  /**
   * The cached answer of `key` (counted as a use), or undefined: the hit path without an effect.
   * With `usable`, an answer it refuses is undefined too and not counted: the caller leaves the
   * request to a handler whose `serve` then counts the one use.
   */
  peek<A>(key: string, usable?: (value: A) => boolean): Served<A> | undefined
  /** An entry grew (a compressed variant was added to it). */
  grew(key: string, bytes: number): void
  readonly stats: () => { readonly entries: number; readonly bytes: number; readonly maxBytes: number }
}>()("vdb/api/ResponseCache") {
  /** `live`: whether the invalidation bus hears every change now (`InvalidationBus.live`); when not, nothing is served or kept. */
  static readonly make = Effect.fnUntraced(function*(maxBytes: number, live: () => boolean = () => true) {
    const clock = yield* Clock.Clock
    const context = yield* Effect.context<never>()
    const entries = new Map<string, Entry>()
    const byDependency = new Map<string, Set<string>>()
    let total = 0
    // Bumped by every invalidation: a build that saw it change may hold what the write replaced.
    let generation = 0

    const remove = (entry: Entry) => {
      entries.delete(entry.key)
      total -= entry.size
      for (const dep of entry.deps) {
        const keys = byDependency.get(dep)
        if (keys === undefined) continue
        keys.delete(entry.key)
        if (keys.size === 0) byDependency.delete(dep)
      }
    }
    const clear = () => {
      generation++
      entries.clear()
      byDependency.clear()
      total = 0
    }
    const evict = (identifiers: ReadonlyArray<string>) => {
      generation++
      for (const id of identifiers) {
        const keys = byDependency.get(touchKey(id))
        if (keys === undefined) continue
        for (const key of [...keys]) {
          const entry = entries.get(key)
          if (entry !== undefined) remove(entry)
        }
      }
    }
    const shrinkTo = (limit: number) => {
      for (const entry of entries.values()) {
        if (total <= limit) return
        remove(entry)
      }
    }
    const insert = (key: string, built: Built<unknown>) => {
      const deps = [...new Set(built.dependsOn.map(touchKey))]
      const size = built.bytes + key.length * 2 + ENTRY_OVERHEAD + deps.length * DEPENDENCY_OVERHEAD
      if (size > maxBytes) return
      const old = entries.get(key)
      if (old !== undefined) remove(old)
      const entry: Entry = {
        key,
        at: clock.currentTimeMillisUnsafe(),
        deps,
        size,
        hit: { value: built.value, hit: true }
      }
      entries.set(key, entry)
      total += size
      for (const dep of deps) {
        let keys = byDependency.get(dep)
        if (keys === undefined) byDependency.set(dep, keys = new Set())
        keys.add(key)
      }
      shrinkTo(maxBytes)
    }

    const onBus = (event: Invalidated) =>
      Effect.sync(() => {
        if (event._tag === "All") return clear()
        const touched = readTouched(event.key)
        if (touched === "all") clear()
        else evict(touched)
      })

    const peek = <A>(key: string, usable?: (value: A) => boolean): Served<A> | undefined => {
      if (!live()) return undefined
      const entry = entries.get(key)
      if (entry === undefined || (usable !== undefined && !usable(entry.hit.value as A))) return undefined
      cacheHits.updateUnsafe(1, context)
      // Most recently used last: re-inserting moves it to the end of the map's order.
      entries.delete(key)
      entries.set(key, entry)
      return entry.hit as Served<A>
    }

    const serve = <A, E, R>(key: string, build: Effect.Effect<Built<A>, E, R>): Effect.Effect<Served<A>, E, R> =>
      Effect.suspend(() => {
        const hit = peek<A>(key)
        if (hit !== undefined) return Effect.succeed(hit)
        const started = generation
        // A miss is counted where the answer is built: a handler's own `peek` before `serve` is not a second one.
        cacheMisses.updateUnsafe(1, context)
        return Effect.map(build, (built): Served<A> => {
          if (maxBytes > 0 && started === generation && live()) insert(key, built)
          return { value: built.value, hit: false }
        })
      })

    const serveMany = <A, E, R>(
      keys: ReadonlyArray<string>,
      build: (missing: ReadonlyArray<number>) => Effect.Effect<ReadonlyArray<Built<A>>, E, R>
    ): Effect.Effect<ReadonlyArray<A>, E, R> =>
      Effect.suspend(() => {
        const values = new Array<A>(keys.length)
        const missing: Array<number> = []
        for (let n = 0; n < keys.length; n++) {
          const hit = peek<A>(keys[n]!)
          if (hit === undefined) missing.push(n)
          else values[n] = hit.value
        }
        if (missing.length === 0) return Effect.succeed(values)
        const started = generation
        cacheMisses.updateUnsafe(missing.length, context)
        return Effect.map(build(missing), (built) => {
          const keep = maxBytes > 0 && started === generation && live()
          for (let m = 0; m < missing.length; m++) {
            const n = missing[m]!
            values[n] = built[m]!.value
            if (keep) insert(keys[n]!, built[m]!)
          }
          return values
        })
      })

    const grew = (key: string, bytes: number) => {
      const entry = entries.get(key)
      if (entry === undefined) return
      entry.size += bytes
      total += bytes
      if (total > maxBytes) shrinkTo(maxBytes)
    }

    /** Drops entries past `MAX_AGE_MILLIS` (run off the request path). */
    const sweep = Effect.sync(() => {
      const oldest = clock.currentTimeMillisUnsafe() - MAX_AGE_MILLIS
      for (const entry of entries.values()) if (entry.at <= oldest) remove(entry)
    })

    const service = ResponseCache.of({
      serve,
      serveMany,
      peek,
      grew,
      stats: () => ({ entries: entries.size, bytes: total, maxBytes })
    })
    return { service, onBus, evict, sweep }
  })

  static readonly layer = Layer.effect(
    ResponseCache,
    Effect.gen(function*() {
      const maxBytes = Math.max(0, yield* Effect.orDie(ResponseCacheBytes))
      const bus = yield* Invalidation
      const { evict, onBus, service, sweep } = yield* ResponseCache.make(maxBytes, bus.live)
      yield* sweep.pipe(Effect.repeat(Schedule.spaced(SWEEP_MILLIS)), Effect.forkScoped)
      yield* bus.subscribe("vuln-records", onBus)
      // This process's own writes (and a store without the bus, like the tests' fixtures).
      const store = yield* VulnStore
      yield* store.touched.pipe(
        Stream.runForEach((ids) => Effect.sync(() => evict(ids))),
        Effect.forkScoped
      )
      return service
    })
  )
}
