import { type Context, Effect, Layer, Metric } from "effect"
import { constants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks"

/**
 * Process series, read when metrics are scraped (effect's own runtime metrics
 * count fibers only, not Node's event loop, heap or GC). Nothing here runs
 * per request: the event-loop monitor samples in libuv, and a GC observer
 * fires once per collection.
 */
const gauge = (name: string, description: string) => Metric.gauge(name, { description })

const NS_PER_SECOND = 1e9

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [constants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb"
}
const GC_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]

const pull = (metric: Metric.Gauge<number>, context: Context.Context<never>, read: () => number) =>
  Metric.registerUnsafe(metric, context, { get: () => ({ value: read() }), update: () => {}, modify: () => {} })

/**
 * Registers the process series for as long as the layer lives. Event-loop
 * delay percentiles cover the time since the previous scrape (the monitor is
 * reset after each read, as prom-client does), so a stall shows at the next
 * scrape and then goes away.
 */
export const ProcessMetricsLayer = Layer.effectDiscard(Effect.gen(function*() {
  const context = yield* Effect.context<never>()
  const delay = monitorEventLoopDelay({ resolution: 10 })
  delay.enable()
  let readAt = 0
  let last = { p50: 0, p99: 0, max: 0 }
  // One snapshot per scrape: the three gauges are read one after the other, then the window restarts.
  const delaySnapshot = () => {
    const now = Date.now()
    if (now - readAt > 100) {
      readAt = now
      last = {
        p50: delay.count > 0 ? delay.percentile(50) / NS_PER_SECOND : 0,
        p99: delay.count > 0 ? delay.percentile(99) / NS_PER_SECOND : 0,
        max: delay.count > 0 ? delay.max / NS_PER_SECOND : 0
      }
      delay.reset()
    }
    return last
  }
  const registrations = [
    pull(
      gauge("vdb_process_event_loop_delay_p50_seconds", "Median event-loop delay since the previous scrape"),
      context,
      () => delaySnapshot().p50
    ),
    pull(
      gauge("vdb_process_event_loop_delay_p99_seconds", "99th percentile event-loop delay since the previous scrape"),
      context,
      () => delaySnapshot().p99
    ),
    pull(
      gauge("vdb_process_event_loop_delay_max_seconds", "Longest event-loop delay since the previous scrape"),
      context,
      () => delaySnapshot().max
    ),
    pull(gauge("vdb_process_resident_memory_bytes", "Resident set size"), context, () => process.memoryUsage.rss()),
    pull(gauge("vdb_process_heap_used_bytes", "V8 heap in use"), context, () => process.memoryUsage().heapUsed),
    pull(gauge("vdb_process_heap_total_bytes", "V8 heap reserved"), context, () => process.memoryUsage().heapTotal),
    pull(
      gauge("vdb_process_external_memory_bytes", "Memory of C++ objects bound to JavaScript (buffers included)"),
      context,
      () => process.memoryUsage().external
    ),
    Metric.registerUnsafe(
      Metric.counter("vdb_process_cpu_seconds_total", {
        description: "User and system CPU time used since the process started"
      }),
      context,
      {
        get: () => {
          const { user, system } = process.cpuUsage()
          return { count: (user + system) / 1e6, incremental: true }
        },
        update: () => {},
        modify: () => {}
      }
    )
  ]
  const gcDurations = new Map<string, Metric.Histogram<number>>()
  const gcMetric = (kind: string) => {
    let metric = gcDurations.get(kind)
    if (metric === undefined) {
      metric = Metric.histogram("vdb_process_gc_duration_seconds", {
        description: "Garbage collection pauses by kind",
        boundaries: GC_BUCKETS,
        attributes: { kind }
      })
      gcDurations.set(kind, metric)
    }
    return metric
  }
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = GC_KINDS[(entry as { readonly detail?: { readonly kind?: number } }).detail?.kind ?? -1] ?? "other"
      gcMetric(kind).updateUnsafe(entry.duration / 1000, context)
    }
  })
  observer.observe({ entryTypes: ["gc"] })
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      observer.disconnect()
      delay.disable()
      for (const registration of registrations) registration.remove()
    })
  )
}))
