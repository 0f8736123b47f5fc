import { Context, Effect, Metric, type Scope } from "effect"
import { PrometheusMetrics } from "effect/observability"
import cluster from "node:cluster"
import { createServer, type Server } from "node:http"

/**
 * `/metrics` under `serve --workers N` (docs/operations.md, "Several processes"). Node's cluster
 * hands each connection to one worker, so a scrape of a port the workers shared would read one
 * worker's series. Instead the primary alone listens on the metrics port; at each scrape it asks
 * every worker for its series over the cluster's IPC channel and answers them all, each with a
 * `worker` label (the cluster's worker id: 1 … N, the `VDB_WORKER_INDEX` it was forked with): counters and histograms add up with `sum without (worker)`, and the
 * per-process series (memory, event-loop delay) stay per process. A worker that does not answer
 * within `WORKER_TIMEOUT_MS` is left out of that scrape rather than holding it up.
 */
const ASK = "vdb.metrics.ask"
const ANSWER = "vdb.metrics.answer"
const WORKER_TIMEOUT_MS = 2_000

interface Ask {
  readonly type: typeof ASK
  readonly id: number
}
interface Answer {
  readonly type: typeof ANSWER
  readonly id: number
  readonly snapshot: ReadonlyArray<Metric.Metric.Snapshot>
}

const isAsk = (message: unknown): message is Ask =>
  typeof message === "object" && message !== null && (message as Ask).type === ASK
const isAnswer = (message: unknown): message is Answer =>
  typeof message === "object" && message !== null && (message as Answer).type === ANSWER

/**
 * A worker's side: answers the primary's asks with this process's snapshot for as long as the
 * layer lives. The snapshot holds plain values (counts, sums, bucket counts), carried by the
 * cluster's structured-clone serialisation (`Workers.ts` sets it), which keeps `Infinity` and maps.
 */
export const AnswerPrimaryScrapes = Effect.gen(function*() {
  const context = yield* Effect.context<never>()
  const onMessage = (message: unknown) => {
    if (!isAsk(message)) return
    process.send?.({ type: ANSWER, id: message.id, snapshot: Metric.snapshotUnsafe(context) } satisfies Answer)
  }
  process.on("message", onMessage)
  yield* Effect.addFinalizer(() => Effect.sync(() => process.off("message", onMessage)))
})

let nextAsk = 0

/** Every live worker's snapshot, by its 1-based index; a worker that does not answer in time is left out. */
const gather = (): Promise<
  Array<{ readonly worker: string; readonly snapshot: ReadonlyArray<Metric.Metric.Snapshot> }>
> =>
  Promise.all(
    Object.values(cluster.workers ?? {}).map((worker) =>
      new Promise<{ worker: string; snapshot: ReadonlyArray<Metric.Metric.Snapshot> } | undefined>((resolve) => {
        if (worker === undefined || !worker.isConnected()) return resolve(undefined)
        const id = ++nextAsk
        const done = (value: { worker: string; snapshot: ReadonlyArray<Metric.Metric.Snapshot> } | undefined) => {
          clearTimeout(timer)
          worker.off("message", onMessage)
          resolve(value)
        }
        const onMessage = (message: unknown) => {
          if (isAnswer(message) && message.id === id) done({ worker: String(worker.id), snapshot: message.snapshot })
        }
        const timer = setTimeout(() => done(undefined), WORKER_TIMEOUT_MS)
        worker.on("message", onMessage)
        worker.send({ type: ASK, id } satisfies Ask, (error: Error | null) => error && done(undefined))
      })
    )
  ).then((answers) => answers.filter((answer) => answer !== undefined))

const noop = () => {}

/** The workers' snapshots as one registry, each series with its `worker` label, in Prometheus text. */
export const formatWorkers = (
  answers: ReadonlyArray<{ readonly worker: string; readonly snapshot: ReadonlyArray<Metric.Metric.Snapshot> }>
) => {
  const registry: Metric.MetricRegistry = new Map()
  for (const { snapshot, worker } of answers) {
    snapshot.forEach(({ state, ...meta }, i) => {
      registry.set(`${worker}:${i}`, {
        ...meta,
        attributes: { ...meta.attributes, worker },
        hooks: { get: () => state, update: noop, modify: noop }
      })
    })
  }
  return PrometheusMetrics.formatUnsafe(Context.make(Metric.MetricRegistry, registry))
}

/** The primary's metrics server: `GET /metrics` gathers the workers' series; anything else is 404. */
export const primaryMetricsServer = (host: string, port: number): Effect.Effect<Server, unknown, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<Server, unknown>((resume) => {
      const server = createServer((request, response) => {
        if (request.method !== "GET" || request.url?.split("?")[0] !== "/metrics") {
          response.writeHead(404).end()
          return
        }
        gather().then((answers) => {
          response.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" })
          response.end(formatWorkers(answers))
        }, () => response.writeHead(500).end())
      })
      server.once("error", (error) => resume(Effect.fail(error)))
      server.listen({ host, port }, () => resume(Effect.succeed(server)))
      return undefined
    }),
    (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
  )
