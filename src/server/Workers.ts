import { Effect, Option, Schema } from "effect"
import cluster from "node:cluster"
import { DatabaseUrl } from "../config/AppConfig.ts"

/**
 * `bin/vdb serve --workers N`: N processes serving the same ports (Node's cluster: the primary owns
 * the listening sockets and hands connections to the workers). Everything they share is in
 * PostgreSQL (limits, grants, nonces, caches invalidated by NOTIFY), so any worker may answer any
 * request. The admin socket and the once-per-start background work (resuming interrupted
 * normalisation) run in worker 1 only: one process answers `bin/vdb` commands, and two
 * resumptions would only race over the same pending items.
 */
export class WorkersNeedPostgres extends Schema.TaggedError<WorkersNeedPostgres>()("WorkersNeedPostgres", {}) {
  override get message() {
    return "--workers needs PostgreSQL (DATABASE_URL): the embedded database can be opened by one process only"
  }
}

export class WorkersInvalid extends Schema.TaggedError<WorkersInvalid>()("WorkersInvalid", { value: Schema.String }) {
  override get message() {
    return `--workers / VDB_WORKERS: "${this.value}" is not a whole number from 1 to 64`
  }
}

/** The worker index the primary gave this process (1-based); 1 when not a cluster worker. */
export const workerIndex = (): number => cluster.isWorker ? Number(process.env.VDB_WORKER_INDEX ?? "1") : 1

/** Is this process the one that runs the admin socket and once-per-start work? */
export const isLeadWorker = (): boolean => workerIndex() === 1

export const checkWorkers = Effect.fnUntraced(function*(workers: number) {
  if (!Number.isInteger(workers) || workers < 1 || workers > 64) {
    return yield* new WorkersInvalid({ value: String(workers) })
  }
  if (workers > 1 && Option.isNone(yield* DatabaseUrl)) return yield* new WorkersNeedPostgres()
  return workers
})

/**
 * The primary: forks the workers and waits. SIGTERM or SIGINT (which interrupt this fiber) is
 * forwarded to every worker as SIGTERM (each drains its requests as a single server does) and the
 * primary exits once all have stopped. A worker that dies on its own takes the others down with
 * it and the primary exits 1: a supervisor (systemd's Restart=) restarts the whole, rather than a
 * half-serving cluster limping on.
 */
export const runPrimary = (workers: number): Effect.Effect<never> =>
  Effect.callback<never>(() => {
    let alive = 0
    let stopping = false
    let failed = false
    let allStopped: () => void = () => {}
    const stopped = new Promise<void>((resolve) => (allStopped = resolve))
    const stopAll = () => {
      stopping = true
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill("SIGTERM")
    }
    cluster.on("exit", (worker, code, signal) => {
      alive--
      if (!stopping) {
        process.stderr.write(`${
          JSON.stringify({
            message: "a worker stopped on its own; stopping the others",
            level: "ERROR",
            timestamp: new Date().toISOString(),
            annotations: { worker: worker.id, pid: worker.process.pid, code, signal }
          })
        }\n`)
        failed = true
        stopAll()
      }
      if (alive > 0) return
      if (failed) process.exit(1)
      allStopped()
    })
    // Structured clone over IPC: the workers' metric snapshots (metrics/ClusterMetrics.ts) hold Infinity bucket bounds.
    cluster.setupPrimary({ serialization: "advanced" })
    for (let index = 1; index <= workers; index++) {
      cluster.fork({ VDB_WORKER_INDEX: String(index) })
      alive++
    }
    return Effect.promise(() => {
      stopAll()
      return stopped
    })
  })
