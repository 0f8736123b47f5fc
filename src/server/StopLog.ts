import { Clock, Context, Effect, Layer } from "effect"

/** A stop that takes longer says what it waited for. */
const SLOW_STOP_MILLIS = 1000
/** Parts that stopped faster are in the line's annotations only, not in its words. */
const NOTABLE_MILLIS = 100

interface Part {
  /** What stopping it waits for, as the line says it: `requests in flight on gateway`. */
  readonly waitedFor: string
  readonly millis: number
}

/**
 * The two log lines of `bin/vdb serve` stopping (SIGTERM, SIGINT): one as it begins, with the
 * requests each service has in flight, and, when the stop took over a second, one with
 * what it waited for and how long (requests in flight on a service, the database closing).
 * It logged nothing: a stop that waited 20 s for a slow request looked like a hang.
 *
 * Parts stop concurrently (one service's requests while another's), so each part's wait counts
 * from the moment stopping began; the data layer stops after every service, so its wait counts
 * from when the last of them had stopped.
 */
export class StopLog extends Context.Service<StopLog, {
  /** Counts a service's requests in flight (`InterceptingServer.inFlight`) in the first line. */
  readonly watch: (name: string, server: { readonly inFlight: number }) => void
  /** The first line; the summary is written only after it. */
  readonly stopping: Effect.Effect<void>
  /** A part has stopped; `waitedFor` counts from `since` (default: when stopping began). */
  readonly stopped: (waitedFor: string, since?: "stopping" | "services") => Effect.Effect<void>
}>()("vdb/server/StopLog") {
  static readonly layer = Layer.effect(
    StopLog,
    Effect.gen(function*() {
      const servers = new Map<string, { readonly inFlight: number }>()
      const parts: Array<Part> = []
      let began: number | undefined
      let servicesDone: number | undefined

      // Registered before anything it measures is built, so it runs after all of them have stopped.
      yield* Effect.addFinalizer(() =>
        Effect.gen(function*() {
          if (began === undefined) return
          const millis = (yield* Clock.currentTimeMillis) - began
          if (millis <= SLOW_STOP_MILLIS) return
          const notable = parts.filter((p) => p.millis >= NOTABLE_MILLIS).sort((a, b) => b.millis - a.millis)
          const waited = notable.map((p) => `${seconds(p.millis)} for ${p.waitedFor}`).join(", ")
          yield* Effect.logInfo(`vdb stopped after ${seconds(millis)}${waited === "" ? "" : `; it waited ${waited}`}`)
            .pipe(
              Effect.annotateLogs({
                stopMs: millis,
                waitedMs: Object.fromEntries(parts.map((p) => [p.waitedFor, p.millis]))
              })
            )
        })
      )

      return StopLog.of({
        watch: (name, server) => void servers.set(name, server),
        stopping: Effect.gen(function*() {
          began = yield* Clock.currentTimeMillis
          const inFlight = Object.fromEntries([...servers].map(([name, server]) => [name, server.inFlight]))
          yield* Effect.logInfo("vdb is stopping: new connections are refused, requests in flight may finish").pipe(
            Effect.annotateLogs({ requestsInFlight: inFlight })
          )
        }),
        stopped: (waitedFor, since = "stopping") =>
          Effect.map(Clock.currentTimeMillis, (now) => {
            if (began === undefined) return
            const from = since === "services" ? servicesDone ?? began : began
            parts.push({ waitedFor, millis: now - from })
            servicesDone = Math.max(servicesDone ?? now, now)
          })
      })
    })
  )
}

const seconds = (millis: number) => `${(millis / 1000).toFixed(1)} s`

/**
 * `layer`, whose stop is one part of the summary: marked once everything it built has stopped
 * (the mark is registered before it builds, so it runs after its finalizers).
 */
export const stopPart = <A, E, R>(waitedFor: string, layer: Layer.Layer<A, E, R>, since?: "stopping" | "services") =>
  Layer.unwrap(Effect.gen(function*() {
    const log = yield* StopLog
    yield* Effect.addFinalizer(() => log.stopped(waitedFor, since))
    return layer
  }))
