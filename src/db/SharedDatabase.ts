import { Context, Effect, Semaphore } from "effect"

/**
 * Whether other processes may use this process's database at the same time: true on PostgreSQL
 * (`layerPostgres` provides it), false on PGlite, which one process opens at a time. A lock that must
 * hold across processes is a PostgreSQL advisory lock only when it is true; otherwise one in this
 * process is enough, and PGlite's single session is not held for the lock's duration.
 */
export class SharedDatabase extends Context.Reference<boolean>("vdb/db/SharedDatabase", {
  defaultValue: () => false
}) {}

/**
 * One lock per key within this process, for the single-process case. A key's semaphore is dropped
 * when nobody holds or waits for it, so the map holds only the keys in use.
 */
export const makeLocalLocks = () => {
  const locks = new Map<string, { readonly semaphore: Semaphore.Semaphore; users: number }>()
  return <A, E, R>(key: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      let entry = locks.get(key)
      if (entry === undefined) locks.set(key, entry = { semaphore: Semaphore.makeUnsafe(1), users: 0 })
      entry.users++
      const held = entry
      return held.semaphore.withPermits(1)(effect).pipe(
        Effect.ensuring(Effect.sync(() => {
          if (--held.users === 0) locks.delete(key)
        }))
      )
    })
}
