import { randomUUID } from "node:crypto"
import { Cause, Console, Effect, Exit } from "effect"
import type { HttpServerResponse } from "effect/http"
import { HttpServerRequest } from "effect/http"

const pathOf = (url: string) => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

/**
 * A console that joins the one-string lines written within one event-loop
 * turn into a single write of the underlying console: under load the access
 * log costs one write per turn instead of one (synchronous, for files and
 * pipes) write per request. Format and destination stay the logger's; any
 * other call flushes first, so order is kept.
 */
const batchingConsoles = new WeakMap<Console.Console, Console.Console>()
const flushers = new Set<() => void>()
process.once("exit", () => flushers.forEach((flush) => flush()))
const batching = (target: Console.Console): Console.Console => {
  const existing = batchingConsoles.get(target)
  if (existing !== undefined) return existing
  const pending: Record<"log" | "error", Array<string>> = { log: [], error: [] }
  let scheduled = false
  const flush = () => {
    scheduled = false
    for (const method of ["log", "error"] as const) {
      const lines = pending[method]
      if (lines.length === 0) continue
      pending[method] = []
      target[method](lines.join("\n"))
    }
  }
  const buffered = (method: "log" | "error") => (...args: ReadonlyArray<unknown>) => {
    if (args.length !== 1 || typeof args[0] !== "string") {
      flush()
      return target[method](...args)
    }
    pending[method].push(args[0])
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  }
  const own = { log: buffered("log"), error: buffered("error") }
  const console = new Proxy(target, {
    get: (t, key) =>
      key === "log" || key === "error" ? own[key] : (...args: Array<unknown>) => {
        flush()
        return (t[key as keyof Console.Console] as (...a: Array<unknown>) => unknown)(...args)
      }
  })
  flushers.add(flush)
  batchingConsoles.set(target, console)
  return console
}

/**
 * One structured line per request: request id, service, method, path (never
 * the query string, which may carry credentials), status and duration. Headers
 * and bodies are never logged.
 */
export const accessLog = (service: string) =>
<E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const started = performance.now()
    const requestId = request.headers["x-request-id"] ?? randomUUID()
    return Effect.onExit(app, (exit) => {
      const status = Exit.isSuccess(exit) ? exit.value.status : Cause.hasInterruptsOnly(exit.cause) ? 499 : 500
      return Console.consoleWith((console) =>
        Effect.logInfo("request").pipe(
          Effect.annotateLogs({
            service,
            requestId,
            method: request.method,
            route: pathOf(request.url),
            status,
            durationMs: Math.round((performance.now() - started) * 1000) / 1000
          }),
          Effect.provideService(Console.Console, batching(console))
        ))
    })
  })
