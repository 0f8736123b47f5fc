import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Config, Cron, Duration, Effect, Layer, Option, Result, Schema } from "effect"
import {
  ClusterCron,
  RunnerAddress,
  RunnerHealth,
  Runners,
  RunnerStorage,
  Sharding,
  ShardingConfig,
  SqlMessageStorage,
  SqlRunnerStorage
} from "effect/cluster"
import { Digest } from "effect/crypto"
import { randomUUID } from "node:crypto"
import { hostname } from "node:os"
import { DatabaseUrl } from "../config/AppConfig.ts"
import { catalogueOf } from "./Catalogues.ts"
import { FeedCursors } from "./FeedCursors.ts"
import { FeedRunLock } from "./FeedRunLock.ts"
import { FEED_SOURCES } from "./FeedSync.ts"
import { scheduledRun } from "./SyncRuns.ts"

export class ScheduleConfigError extends Schema.TaggedError<ScheduleConfigError>()("ScheduleConfigError", {
  variable: Schema.String,
  value: Schema.String
}) {
  override get message() {
    return `${this.variable}=${this.value}: an interval is Ns (N dividing 60), Nm (N dividing 60), Nh (N dividing 24) or 1d`
  }
}

/** Catalogues change daily; delta feeds hourly; NVD asks for no more than one poll per two hours. */
export const defaultInterval = (source: string) =>
  catalogueOf(source) !== undefined ? "1d" : source === "nist-nvd" ? "2h" : "1h"

export const intervalVariable = (source: string) => `VDB_SYNC_INTERVAL_${source.toUpperCase().replaceAll("-", "_")}`

/** A minute of the hour (or of the day's hour) picked from the name, so the sources do not all start together. */
const spread = (source: string, modulo: number) =>
  [...source].reduce((h, c) => (h * 31 + c.charCodeAt(0)) % 9973, 7) % modulo

/**
 * An interval as a cron expression (seconds first): ClusterCron schedules by
 * cron. Only intervals that divide the next unit evenly are ticks of a clock.
 */
export const intervalCron = (
  source: string,
  interval: string
): Result.Result<{ cron: Cron.Cron; ms: number }, ScheduleConfigError> => {
  const fail = Result.fail(new ScheduleConfigError({ variable: intervalVariable(source), value: interval }))
  const m = /^(\d+)(s|m|h|d)$/.exec(interval.trim())
  if (m === null) return fail
  const n = Number(m[1])
  const unit = m[2] as "s" | "m" | "h" | "d"
  const divides = (of: number) => n > 0 && n <= of && of % n === 0
  const minute = spread(source, 60)
  const expression = unit === "s" && divides(60)
    ? `*/${n} * * * * *`
    : unit === "m" && divides(60)
    ? `0 */${n} * * * *`
    : unit === "h" && divides(24)
    ? `0 ${minute} */${n} * * *`
    : unit === "d" && n === 1
    ? `0 ${minute} ${spread(source, 24)} * * *`
    : undefined
  if (expression === undefined) return fail
  const ms = n * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[unit]
  return Result.map(Cron.parse(expression, "UTC"), (cron) => ({ cron, ms })).pipe(Result.orElse(() => fail))
}

/** `VDB_SYNC`: `on` (the default for `vdb serve`) or `off`. */
export const SyncEnabled = Config.Literals(["on", "off"], "VDB_SYNC").pipe(Config.withDefault("on" as const))

/**
 * How long a dead process's sources wait before another process takes them
 * over (the cluster's shard lease). Shorter means more database traffic:
 * leases are refreshed at a third of it.
 */
export const SyncTakeover = Config.Duration("VDB_SYNC_TAKEOVER").pipe(Config.withDefault(Duration.seconds(30)))

/**
 * The cluster every `vdb serve` on a database joins, with no network between
 * runners: shard leases and runner heartbeats are rows and advisory locks in
 * PostgreSQL (SqlRunnerStorage), and the cron's messages are rows too
 * (SqlMessageStorage), read by their shard's owner as it polls. So processes
 * need to reach only the database, not each other. Each process names itself
 * with a unique address that nothing listens on.
 *
 * The embedded database is one process with one connection, which
 * SqlRunnerStorage's lease connection would hold for good (it recognises
 * PGlite only by its own driver, and ours is PostgreSQL's protocol over
 * pglite-socket): there the runner's registry is in memory, as
 * `SingleRunner` allows, and the messages are still stored.
 */
const clusterLayer = (shared: boolean, takeover: Duration.Duration) => {
  const lease = Duration.max(takeover, Duration.seconds(3))
  const poll = Duration.min(Duration.seconds(10), Duration.divideUnsafe(lease, 3))
  const config = ShardingConfig.layer({
    runnerAddress: Option.some(
      new RunnerAddress.RunnerAddress({ host: `vdb-${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`, port: 0 })
    ),
    shardsPerGroup: 16,
    shardLockExpiration: lease,
    shardLockRefreshInterval: Duration.divideUnsafe(lease, 4),
    entityMessagePollInterval: poll,
    refreshAssignmentsInterval: Duration.min(Duration.seconds(3), Duration.divideUnsafe(lease, 6)),
    // The runs are long; a shutdown leaves an unfinished one to be run again rather than waiting for it.
    entityTerminationTimeout: Duration.seconds(5)
  })
  return Sharding.layer.pipe(
    Layer.provideMerge(Runners.layerNoop),
    Layer.provideMerge(SqlMessageStorage.layer.pipe(Layer.provide(Digest.layerWebCrypto))),
    Layer.provide([shared ? Layer.orDie(SqlRunnerStorage.layer) : RunnerStorage.layerMemory, RunnerHealth.layerNoop]),
    Layer.provide(config)
  )
}

/** Each source's cron and interval, from the environment; a bad interval stops the start with a clear line. */
export const loadSchedule = Effect.gen(function*() {
  const entries: Array<{ source: string; cron: Cron.Cron; ms: number; interval: string }> = []
  for (const source of FEED_SOURCES) {
    const interval = yield* Config.String(intervalVariable(source)).pipe(Config.withDefault(defaultInterval(source)))
    const parsed = intervalCron(source, interval)
    if (Result.isFailure(parsed)) return yield* parsed.failure
    entries.push({ source, interval, ...parsed.success })
  }
  return entries
})

/**
 * `vdb serve`'s schedule: one ClusterCron per source. `calculateNextRunFromPrevious`
 * gives every run of a source to one entity, so they never overlap; a tick
 * older than the interval (the cluster was down) is skipped, not caught up.
 */
export const SyncScheduleLayer = Layer.unwrap(Effect.gen(function*() {
  if ((yield* SyncEnabled) === "off") {
    yield* Effect.logInfo("feed sync schedule is off (VDB_SYNC=off)")
    return Layer.empty
  }
  const schedule = yield* loadSchedule
  const shared = Option.isSome(yield* DatabaseUrl)
  const crons = schedule.map(({ source, cron, ms }) =>
    ClusterCron.make({
      name: `vdb-sync/${source}`,
      cron,
      calculateNextRunFromPrevious: true,
      skipIfOlderThan: Duration.millis(ms),
      execute: scheduledRun(source, () => Cron.next(cron).getTime() - Date.now()).pipe(
        Effect.annotateLogs({ feed: source })
      )
    })
  )
  yield* Effect.logInfo("feed sync scheduled").pipe(
    Effect.annotateLogs(Object.fromEntries(schedule.map((s) => [s.source, s.interval])))
  )
  return Layer.mergeAll(Layer.empty, ...crons).pipe(Layer.provide(clusterLayer(shared, yield* SyncTakeover)))
}))

/** The schedule with the services its runs use (the database's come from the app). */
export const SyncScheduleLive = SyncScheduleLayer.pipe(
  Layer.provide(Layer.mergeAll(FeedCursors.layer, FeedRunLock.layer, NodeHttpClient.layerUndici))
)
