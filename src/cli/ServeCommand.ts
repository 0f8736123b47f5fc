import { Config, Effect, Layer } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import cluster from "node:cluster"
import { Main } from "../../layers/Main.ts"
import { AdminSocketListener } from "../admin/AdminServer.ts"
import { Host, ServicePorts } from "../config/AppConfig.ts"
import { primaryMetricsServer } from "../metrics/ClusterMetrics.ts"
import { MetricsEnabled, MetricsPort } from "../metrics/MetricsConfig.ts"
import { loadTrustedProxies, TrustedProxies } from "../server/ClientAddress.ts"
import { listenFailed, serveLayer } from "../server/Serve.ts"
import { SERVICE_NAMES } from "../server/Services.ts"
import { StopLog, stopPart } from "../server/StopLog.ts"
import { checkWorkers, isLeadWorker, runPrimary } from "../server/Workers.ts"

export const serveCommand = Command.make(
  "serve",
  {
    services: Argument.Literals("service", SERVICE_NAMES).pipe(
      Argument.withDescription("Services to run: api, gateway, site, mcp (default: all four)"),
      Argument.variadic()
    ),
    workers: Flag.Int("workers").pipe(
      Flag.withDescription("Processes serving the same ports (needs DATABASE_URL); default VDB_WORKERS or 1"),
      Flag.withFallbackConfig(Config.Int("VDB_WORKERS")),
      Flag.withDefault(1)
    )
  },
  ({ services, workers }) =>
    Effect.gen(function*() {
      // A malformed address setting is reported at once, not after the database has opened and migrated.
      yield* Host
      yield* ServicePorts
      yield* MetricsEnabled
      yield* MetricsPort
      const trusted = yield* loadTrustedProxies
      // --workers N: this process only forks and waits (src/server/Workers.ts).
      if (cluster.isPrimary && (yield* checkWorkers(workers)) > 1) {
        // The primary alone serves the metrics port, with every worker's series (metrics/ClusterMetrics.ts).
        if (!(yield* MetricsEnabled)) return yield* runPrimary(workers)
        const host = yield* Host
        const port = yield* MetricsPort
        return yield* primaryMetricsServer(host, port).pipe(
          Effect.mapError(listenFailed("VDB_METRICS_PORT", host, port)),
          Effect.andThen(runPrimary(workers)),
          Effect.scoped
        )
      }
      const lead = isLeadWorker()
      yield* Layer.launch(
        serveLayer(services.length === 0 ? SERVICE_NAMES : [...new Set(services)], { admin: lead }).pipe(
          Layer.provide(stopPart("the database to close", Main, "services")),
          // A worker other than the first builds no admin part, so it needs no socket.
          Layer.provide(lead ? AdminSocketListener : Layer.empty as unknown as typeof AdminSocketListener),
          Layer.provide(StopLog.layer),
          Layer.provide(Layer.succeed(TrustedProxies, trusted))
        )
      )
    })
).pipe(Command.withDescription("Run the HTTP services (api, gateway, site, mcp) and the admin socket"))
