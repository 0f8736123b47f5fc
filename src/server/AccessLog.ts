import { randomUUID } from "node:crypto"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Console, Effect, Exit } from "effect"
import type { HttpServerResponse } from "effect/http"
import { HttpServerError, HttpServerRequest } from "effect/http"

/** Long enough for any real route; a 10k-character probe must not become a 10k-character line. */
const MAX_LOGGED_PATH = 512
const pathOf = (url: string) => {
  const q = url.indexOf("?")
  const path = q === -1 ? url : url.slice(0, q)
  return path.length > MAX_LOGGED_PATH ? `${path.slice(0, MAX_LOGGED_PATH)}…` : path
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

/** A client's `x-request-id` is trusted only in this shape; anything else could forge or flood log lines. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/
const requestIdOf = (header: string | undefined) =>
  header !== undefined && REQUEST_ID.test(header) ? header : randomUUID()

/**
 * The client closed the connection before the response was complete (an
 * aborted stream): nginx's 499, whatever the handler's exit says, since a
 * write into a closed socket can surface as a failure rather than an interrupt.
 */
const clientWentAway = (request: HttpServerRequest.HttpServerRequest) => {
  // A function is a lazily created response (an upgrade): nothing was streamed to abort.
  if (typeof (request as { readonly response?: unknown }).response !== "object") return false
  const response = NodeHttpServerRequest.toServerResponse(request)
  return !response.writableEnded && (response.destroyed || response.closed)
}

/** The status the client was sent: a failure was answered by `causeResponse` (404, 499, 503, 500...). */
const statusOf = (
  request: HttpServerRequest.HttpServerRequest,
  exit: Exit.Exit<HttpServerResponse.HttpServerResponse, unknown>
): Effect.Effect<number> =>
  clientWentAway(request)
    ? Effect.succeed(499)
    : Exit.isSuccess(exit)
    ? Effect.succeed(exit.value.status)
    : Effect.map(HttpServerError.causeResponse(exit.cause), ([response]) => response.status)

/**
 * One structured line per request: request id, service, method, path (never
 * the query string, which may carry credentials), the status actually sent and
 * duration. Headers and bodies are never logged.
 */
export const accessLog = (service: string) =>
<E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const started = performance.now()
    const requestId = requestIdOf(request.headers["x-request-id"])
    return Effect.onExit(app, (exit) =>
      Effect.flatMap(statusOf(request, exit), (status) =>
        Console.consoleWith((console) =>
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
          )
        )))
  })
