import { Clock, Effect, Option } from "effect"
import type { SyncOptions, SyncOutcome } from "./CatalogueSync.ts"
import { FeedCursors } from "./FeedCursors.ts"
import { FeedRunLock } from "./FeedRunLock.ts"
import { syncSources, whyOff } from "./FeedSync.ts"

/** A source whose run was not started because one is going on (on this process or another). */
export interface SyncBusy {
  readonly source: string
  readonly status: "busy"
}

/** A source that does not run here (VulnCheck without its token), and why. */
export interface SyncOff {
  readonly source: string
  readonly status: "off"
  readonly reason: string
}

/** One source's run, unless one of the same source is going on anywhere (runs never overlap) or it is off. */
export const syncExclusive = (source: string, options: SyncOptions = {}) =>
  Effect.gen(function*() {
    const off = yield* whyOff(source)
    if (off !== undefined) return { source, status: "off", reason: off } satisfies SyncOff
    const lock = yield* FeedRunLock
    const ran = yield* lock.exclusive(source, syncSources([source], options))
    return Option.match(ran, {
      onNone: (): SyncOutcome | SyncBusy => ({ source, status: "busy" }),
      onSome: (outcomes) => outcomes[0]!
    })
  })

/**
 * The schedule's run of one source at its tick. A source still in a failure
 * streak waits for the time its backoff (or the publisher's Retry-After) set,
 * and tries again then, as long as that comes before the next tick; otherwise
 * the tick is left to a later one. The streak's one warning is logged by the
 * run that began it (`recordFailure`).
 */
export const scheduledRun = (source: string, untilNextTickMs: () => number, options: SyncOptions = {}) =>
  Effect.gen(function*() {
    const cursors = yield* FeedCursors
    while (true) {
      const state = yield* cursors.get(source)
      if (state !== undefined && state.failures > 0 && state.nextRunAt !== undefined) {
        const wait = state.nextRunAt.getTime() - (yield* Clock.currentTimeMillis)
        if (wait >= untilNextTickMs()) return
        if (wait > 0) yield* Effect.sleep(wait)
      }
      const outcome = yield* syncExclusive(source, options)
      // A source that is off is passed over without a word, as a run of it says nothing.
      if (outcome.status === "off") return
      // One line per run (hourly or daily); a failure's line is recordFailure's, once per streak.
      if (outcome.status !== "failed") {
        return yield* Effect.logInfo(`feed ${source}: ${outcome.status}`).pipe(
          Effect.annotateLogs(outcome.status === "busy" ? {} : { changed: outcome.changed, failed: outcome.failed })
        )
      }
    }
  })
