import { Config } from "effect"

/**
 * `GET /metrics` on a port of its own (docs/operations.md): on unless
 * `VDB_METRICS=off`, on `VDB_METRICS_PORT` (9464, Prometheus's registered
 * port for Node exporters), bound to `VDB_HOST` like the services.
 */
export const MetricsEnabled = Config.Literals(["on", "off"], "VDB_METRICS").pipe(
  Config.withDefault("on" as const),
  Config.map((value) => value === "on")
)

export const MetricsPort = Config.Port("VDB_METRICS_PORT").pipe(Config.withDefault(9464))
