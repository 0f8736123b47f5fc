import { Effect, Semaphore } from "effect"

/**
 * Batches being written at once across all the runs on one store (a sync's sources run at once):
 * each run keeps up to `inFlight` of its own, but four runs with three each stored and normalised
 * twelve batches at once (the server's RSS rose 780 MB above idle in a 200,000-record first sync),
 * while the database wrote two raw transactions and one phase 2 at a time anyway. A turn covers a
 * batch's raw phase and its normalising, not its wait for the previous batch's phase 2.
 */
const PROCESS_IN_FLIGHT = 4
const turnsByStore = new WeakMap<object, Semaphore.Semaphore>()

export const batchTurns = (store: object) => {
  let turns = turnsByStore.get(store)
  if (turns === undefined) turnsByStore.set(store, turns = Semaphore.makeUnsafe(PROCESS_IN_FLIGHT))
  return turns
}

/**
 * Characters of raw text the batches of all the runs on one store hold at once, from the moment a
 * batch is cut until its phase 2 is written. Turns bound the batches being worked on, not the ones
 * waiting for a turn or for the previous batch's phase 2: with four sources each holding up to
 * `inFlight` batches and their normalised output, a first sync's server stood 570-600 MB above
 * idle. A run that would pass the budget waits before cutting its next batch, so its reading (the
 * download, the archive, the parser) waits too.
 */
export const PROCESS_BATCH_CHARS = 32 * 1024 * 1024
const budgetByStore = new WeakMap<object, { readonly limit: number; readonly semaphore: Semaphore.Semaphore }>()

export interface BatchBudget {
  /** Waits until `chars` (at most the whole budget) are free, takes them, and gives their release (runs once). */
  readonly take: (chars: number) => Effect.Effect<Effect.Effect<void>>
  /** Gives back whatever this run's batches still hold (the run is ending, however it ends). */
  readonly releaseAll: Effect.Effect<void>
}

/**
 * One run's share of its store's budget. `limit` is the budget's size when this is the first run
 * on the store (tests give a small one); later runs share the budget as it was made.
 */
export const batchBudget = (store: object, limit: number = PROCESS_BATCH_CHARS): BatchBudget => {
  let budget = budgetByStore.get(store)
  if (budget === undefined) budgetByStore.set(store, budget = { limit, semaphore: Semaphore.makeUnsafe(limit) })
  const { semaphore } = budget
  const cap = budget.limit
  const held = new Set<{ readonly chars: number }>()
  const release = (hold: { readonly chars: number }) =>
    Effect.suspend(() => held.delete(hold) ? semaphore.release(hold.chars) : Effect.void)
  return {
    take: (chars) =>
      Effect.uninterruptibleMask((restore) => {
        const hold = { chars: Math.max(0, Math.min(cap, Math.ceil(chars))) }
        return Effect.map(restore(semaphore.take(hold.chars)), () => {
          held.add(hold)
          return release(hold)
        })
      }),
    releaseAll: Effect.suspend(() => Effect.forEach([...held], release, { discard: true }))
  }
}
