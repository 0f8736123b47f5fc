import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import cluster from "node:cluster"
import { createServer } from "node:http"
import { AnswerPrimaryScrapes } from "../metrics/ClusterMetrics.ts"
import { FeedFreshnessLayer } from "../metrics/DataMetrics.ts"
import { MetricsEnabled, MetricsPort } from "../metrics/MetricsConfig.ts"
import { ProcessMetricsLayer } from "../metrics/ProcessMetrics.ts"

/**
 * `GET /metrics` (Prometheus text format) on its own port, bound to `VDB_HOST`
 * like the services: a scraper reaches it where it reaches them, and a
 * firewall or the reverse proxy keeps it from the public (docs/operations.md).
 * Nothing else is served there: no access log, no health routes. Off with
 * `VDB_METRICS=off`, and then the process series are not collected either.
 * `listenFailed` names the address and `VDB_METRICS_PORT` when it cannot bind. A worker of
 * `serve --workers N` does not listen: the primary serves the port and gathers every worker's
 * series (`metrics/ClusterMetrics.ts`).
 */
export const metricsService = <E>(host: string, listenFailed: (port: number) => (cause: unknown) => E) =>
  Layer.unwrap(Effect.gen(function*() {
    if (!(yield* MetricsEnabled)) return Layer.empty
    if (cluster.isWorker) {
      return Layer.mergeAll(Layer.effectDiscard(AnswerPrimaryScrapes), ProcessMetricsLayer, FeedFreshnessLayer)
    }
    const port = yield* MetricsPort
    const listen = NodeHttpServer.make(createServer, { host, port, gracefulShutdownTimeout: "1 second" }).pipe(
      Effect.mapError(listenFailed(port))
    )
    return HttpRouter.serve(PrometheusMetrics.layerHttp({ path: "/metrics" }), {
      disableLogger: true,
      disableListenLog: true
    }).pipe(
      Layer.provide(Layer.mergeAll(Layer.effect(HttpServer.HttpServer, listen), NodeHttpServer.layerHttpServices)),
      Layer.merge(ProcessMetricsLayer),
      Layer.merge(FeedFreshnessLayer)
    )
  }))
