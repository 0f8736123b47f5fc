import { randomUUID } from "node:crypto"
import { Cause, Effect, Exit } from "effect"
import type { HttpServerResponse } from "effect/http"
import { HttpServerRequest } from "effect/http"

const pathOf = (url: string) => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
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
      return Effect.logInfo("request").pipe(
        Effect.annotateLogs({
          service,
          requestId,
          method: request.method,
          route: pathOf(request.url),
          status,
          durationMs: Math.round((performance.now() - started) * 1000) / 1000
        })
      )
    })
  })
