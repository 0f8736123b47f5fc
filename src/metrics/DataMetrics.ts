import { type Context, Effect, Layer, Metric, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { seriesBy2 } from "./Series.ts"

/**
 * The data series in /metrics (docs/operations.md, "Data"): records ingested and synced by source
 * and outcome, counted in the process that did the work, and each feed's last successful sync,
 * read from the database (`feed_cursors`) so that every serving process reports it whichever
 * process or `bin/vdb sync` ran the feed. Sources are the formats' and feeds' own names, a fixed set.
 */
const ingested = seriesBy2((source, outcome) =>
  Metric.counter("vdb_ingest_records_total", {
    description: "Records read by ingestion, by source and outcome (inserted, updated, unchanged, failed)",
    incremental: true,
    attributes: { source, outcome }
  })
)

export type IngestOutcome = "inserted" | "updated" | "unchanged" | "failed"

/**
 * A batch's records by source and outcome (the store's answer for each raw record, or `failed`
 * for one that could not be normalised): one counter update per record, no effect per record.
 */
export const countIngested = (records: ReadonlyArray<{ readonly source: string; readonly outcome: IngestOutcome }>) =>
  Effect.contextWith((context: Context.Context<never>) =>
    Effect.sync(() => {
      for (const { outcome, source } of records) ingested(source, outcome).updateUnsafe(1, context)
    })
  )

const syncRuns = seriesBy2((source, outcome) =>
  Metric.counter("vdb_feed_sync_runs_total", {
    description: "Feed sync runs by source and outcome (ok, failed)",
    incremental: true,
    attributes: { source, outcome }
  })
)
const syncRecords = seriesBy2((source, outcome) =>
  Metric.counter("vdb_feed_sync_records_total", {
    description: "Records feed syncs stored (changed) or could not read (failed), by source",
    incremental: true,
    attributes: { source, outcome }
  })
)

/** One finished sync run of a feed: its outcome and the records it changed and could not read. */
export const countSyncRun = (source: string, ok: boolean, changed: number, failed: number) =>
  Effect.all([
    Metric.update(syncRuns(source, ok ? "ok" : "failed"), 1),
    Metric.update(syncRecords(source, "changed"), changed),
    Metric.update(syncRecords(source, "failed"), failed)
  ], { discard: true })

const lastSuccess = Metric.gauge("vdb_feed_last_success_timestamp_seconds", {
  description: "When each feed last synced successfully (Unix seconds); alert on time() minus this"
})

/** How often a serving process rereads the feeds' last successes. */
const REFRESH = "30 seconds"

/**
 * Keeps `vdb_feed_last_success_timestamp_seconds{source}` current while the layer lives, from
 * `feed_cursors` every 30 s. A failed read keeps the previous values (the database's own series
 * show the outage).
 */
export const FeedFreshnessLayer = Layer.effectDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const refresh = sql<{ readonly source: string; readonly at: number }>`
    SELECT source, extract(epoch FROM last_success_at)::float8 AS at FROM feed_cursors WHERE last_success_at IS NOT NULL`
    .pipe(
      Effect.flatMap((rows) =>
        Effect.forEach(
          rows,
          ({ at, source }) => Metric.update(Metric.withAttributes(lastSuccess, { source }), Number(at)),
          { discard: true }
        )
      ),
      Effect.ignore
    )
  yield* Effect.forkScoped(Effect.repeat(refresh, Schedule.spaced(REFRESH)))
}))
