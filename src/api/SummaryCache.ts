import { Clock, Context, Effect, Layer, Stream } from "effect"
import { VulnStore } from "../vulns/VulnStore.ts"
import type { SummaryBody } from "./Summary.ts"

export const SUMMARY_TTL_MILLIS = 60_000
const MAX_ENTRIES = 10_000

/**
 * A small in-process TTL cache of `/info` summaries keyed by the normalised
 * identifier. An entry is dropped as soon as the store reports that any
 * identifier it was built from (the query, its aliases, the source records'
 * identifiers) was touched, so ingestion is visible at once; the TTL bounds
 * what another process's ingestion can leave stale here.
 */
export class SummaryCache extends Context.Service<SummaryCache, {
  get(identifier: string): Effect.Effect<SummaryBody | undefined>
  set(identifier: string, body: SummaryBody, dependsOn: ReadonlyArray<string>): Effect.Effect<void>
}>()("vdb/api/SummaryCache") {
  static readonly layer = Layer.effect(SummaryCache, Effect.gen(function*() {
    const store = yield* VulnStore
    const entries = new Map<string, { readonly body: SummaryBody; readonly expires: number; readonly deps: ReadonlyArray<string> }>()
    const byDependency = new Map<string, Set<string>>()

    const remove = (key: string) => {
      const entry = entries.get(key)
      if (entry === undefined) return
      entries.delete(key)
      for (const dep of entry.deps) byDependency.get(dep)?.delete(key)
    }

    yield* store.touched.pipe(
      Stream.runForEach((ids) =>
        Effect.sync(() => {
          for (const id of ids) {
            const dependants = byDependency.get(id.toUpperCase())
            if (dependants === undefined) continue
            byDependency.delete(id.toUpperCase())
            for (const key of dependants) remove(key)
          }
        })
      ),
      Effect.forkScoped
    )

    return SummaryCache.of({
      get: (identifier) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const entry = entries.get(identifier)
          if (entry === undefined) return undefined
          if (entry.expires <= now) {
            remove(identifier)
            return undefined
          }
          return entry.body
        }),
      set: (identifier, body, dependsOn) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          remove(identifier)
          if (entries.size >= MAX_ENTRIES) remove(entries.keys().next().value!)
          const deps = [...new Set(dependsOn.map((d) => d.toUpperCase()))]
          entries.set(identifier, { body, expires: now + SUMMARY_TTL_MILLIS, deps })
          for (const dep of deps) {
            const set = byDependency.get(dep) ?? new Set<string>()
            set.add(identifier)
            byDependency.set(dep, set)
          }
        })
    })
  }))
}
