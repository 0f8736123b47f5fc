import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { type Context, Cron, Effect, Layer, Queue, Result, Stream } from "effect"
import type { HttpClient } from "effect/http"
import type { VulnStore } from "../vulns/VulnStore.ts"
import { FeedCursors, type FeedState } from "./FeedCursors.ts"
import { FeedRpcs, type FeedStatus, type SyncEvent, SyncFinished, SyncItems, SyncStarted } from "./FeedRpcs.ts"
import { FeedRunLock } from "./FeedRunLock.ts"
import { FEED_SOURCES, syncStatus, UnknownFeed, whyOff } from "./FeedSync.ts"
import { summingSink, SyncProgress } from "./SyncProgress.ts"
import { syncExclusive } from "./SyncRuns.ts"
import { loadSchedule } from "./SyncSchedule.ts"

const iso = (d: Date | undefined) => d?.toISOString() ?? null

/** The first tick of the source's cron at or after its failure streak's next try (or now). */
const nextTick = (cron: Cron.Cron, state: FeedState) => {
  const from = state.failures > 0 && state.nextRunAt !== undefined
    ? Math.max(Date.now(), state.nextRunAt.getTime() - 1)
    : Date.now()
  return Cron.next(cron, from)
}

const statusRow = (
  state: FeedState & { readonly off: string | undefined },
  schedule: { interval: string; cron: Cron.Cron } | undefined
): FeedStatus => ({
  source: state.source,
  cursor: Object.fromEntries(
    Object.entries(state.cursor).filter((e): e is [string, string] => typeof e[1] === "string")
  ),
  lastSuccessAt: iso(state.lastSuccessAt),
  lastAttemptAt: iso(state.lastAttemptAt),
  lastError: state.lastError ?? null,
  lastErrorKind: state.lastErrorKind ?? null,
  failures: state.failures,
  recordsChanged: state.recordsChanged,
  recordsFailed: state.recordsFailed,
  interval: schedule?.interval ?? "-",
  nextRunAt: state.off !== undefined
    ? null
    : schedule === undefined
    ? iso(state.nextRunAt)
    : nextTick(schedule.cron, state).toISOString(),
  off: state.off ?? null,
  provenance: { url: state.lastUrl ?? null, etag: state.lastEtag ?? null, fetchedAt: iso(state.lastFetchedAt) }
})

/**
 * One source after another; each streams its start, its records read, and how it ended.
 * A source that is off is passed over without a word unless it was named (`named`).
 */
const runSources = (
  sources: ReadonlyArray<string>,
  named: boolean,
  full: boolean,
  services: Context.Context<FeedCursors | FeedRunLock | VulnStore | HttpClient.HttpClient>
) =>
  Stream.callback<SyncEvent>((queue) =>
    Effect.gen(function*() {
      const emit = (event: SyncEvent) => Queue.offer(queue, event).pipe(Effect.asVoid)
      const sink = summingSink((source, items) => emit(new SyncItems({ source, items })))
      for (const source of sources) {
        const off = yield* whyOff(source)
        if (off !== undefined) {
          if (named) yield* emit(new SyncFinished({ source, status: "off", reason: off, changed: 0, failed: 0 }))
          continue
        }
        yield* emit(new SyncStarted({ source }))
        // Every name was checked against FEED_SOURCES before the stream began.
        const outcome = yield* syncExclusive(source, { full }).pipe(
          Effect.provideService(SyncProgress, sink),
          Effect.orDie
        )
        yield* emit(
          outcome.status === "busy" || outcome.status === "off"
            ? new SyncFinished({ source, status: outcome.status, changed: 0, failed: 0 })
            : new SyncFinished({
              source,
              status: outcome.status,
              changed: outcome.changed,
              failed: outcome.failed,
              ...(outcome.error === undefined ? {} : { error: outcome.error }),
              nextRunAt: outcome.nextRunAt.toISOString()
            })
        )
      }
      yield* Queue.end(queue)
    }).pipe(Effect.provideContext(services))
  )

export const FeedRpcHandlers = FeedRpcs.toLayer(Effect.gen(function*() {
  const services = yield* Effect.context<FeedCursors | FeedRunLock | VulnStore | HttpClient.HttpClient>()
  return FeedRpcs.of({
    SyncRun: ({ sources, full }) => {
      const unknown = sources.find((s) => !FEED_SOURCES.includes(s))
      if (unknown !== undefined) return Stream.fail(new UnknownFeed({ source: unknown, known: [...FEED_SOURCES] }))
      const named = sources.length > 0
      return runSources(named ? [...new Set(sources)] : FEED_SOURCES, named, full, services)
    },
    SyncStatus: () =>
      Effect.gen(function*() {
        const schedule = yield* loadSchedule.pipe(Effect.result)
        const bySource = new Map(Result.isSuccess(schedule) ? schedule.success.map((s) => [s.source, s]) : [])
        return (yield* syncStatus()).map((state) => statusRow(state, bySource.get(state.source)))
      }).pipe(Effect.provideContext(services))
  })
})).pipe(Layer.provide(Layer.mergeAll(FeedCursors.layer, FeedRunLock.layer, NodeHttpClient.layerUndici)))
