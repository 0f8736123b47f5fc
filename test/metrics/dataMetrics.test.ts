import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { assert, describe, layer } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Metric } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { FeedCursors } from "../../src/feeds/FeedCursors.ts"
import { syncSources } from "../../src/feeds/FeedSync.ts"
import { FeedFreshnessLayer } from "../../src/metrics/DataMetrics.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { PostgresTest } from "../support/database.ts"
import { feedMirror, mirrorConfig } from "../support/feedMirror.ts"

/**
 * The data series (docs/operations.md, "Data"): a feed sync counts its run and records, the
 * ingestion under it counts records by source and outcome, and the last successful sync is
 * read back from `feed_cursors` as a gauge to alert on.
 */
const registry: Metric.MetricRegistry = new Map()
const scrape = () => PrometheusMetrics.formatUnsafe(Context.make(Metric.MetricRegistry, registry))
const valueOf = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

describe("data metrics", () => {
  const app = Layer.mergeAll(VulnStore.layer, FeedCursors.layer).pipe(
    Layer.provideMerge(PostgresTest),
    Layer.merge(NodeHttpClient.layerUndici),
    Layer.provideMerge(Layer.succeed(Metric.MetricRegistry)(registry))
  )
  layer(app, { excludeTestServices: true })((it) => {
    it.effect(
      "a sync counts its run, its records and the ingestion's outcomes; the last success is a gauge",
      () =>
        Effect.scoped(Effect.gen(function*() {
          const mirror = yield* feedMirror
          const config = ConfigProvider.layer(ConfigProvider.fromUnknown(mirrorConfig(mirror)))
          const options = { attempts: 1, backoffBaseMs: 10, ingest: { workers: 0 } }
          yield* syncSources(["cisa-kev"], options).pipe(Effect.provide(config))
          const first = scrape()
          assert.strictEqual(valueOf(first, `vdb_feed_sync_runs_total{source="cisa-kev",outcome="ok"}`), 1)
          assert.strictEqual(valueOf(first, `vdb_feed_sync_records_total{source="cisa-kev",outcome="changed"}`), 44)
          assert.strictEqual(valueOf(first, `vdb_ingest_records_total{source="cisa-kev",outcome="inserted"}`), 44)
          // A failing run: the publisher is gone.
          yield* syncSources(["cisa-kev"], options).pipe(
            Effect.provide(
              ConfigProvider.layer(
                ConfigProvider.fromUnknown({ ...mirrorConfig(mirror), VDB_FEED_CISA_KEV_URL: mirror.url("/gone.json") })
              )
            )
          )
          assert.strictEqual(valueOf(scrape(), `vdb_feed_sync_runs_total{source="cisa-kev",outcome="failed"}`), 1)
          yield* Layer.build(FeedFreshnessLayer)
          yield* Effect.sleep("500 millis")
          const at = valueOf(scrape(), `vdb_feed_last_success_timestamp_seconds{source="cisa-kev"}`)
          assert.ok(Math.abs(at - Date.now() / 1000) < 120, `last success ${at}`)
        })),
      { timeout: 60_000 }
    )
  })
})
