import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Context, Effect, Exit, LogLevel, References, Tracer } from "effect"
import type { HttpServerResponse } from "effect/http"
import { HttpEffect, HttpRouter, HttpServerError, HttpServerRequest } from "effect/http"
import { randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { Readable } from "node:stream"
import { httpRequestRecorder, UNMATCHED_ROUTE } from "../metrics/HttpMetrics.ts"
import { TracingOn, unsampledRequestOf } from "../observability/Tracing.ts"
import { type LineWriter, stderrLineWriter } from "./LineWriter.ts"

/**
 * Where access-log lines go. The default is the process's stderr, batched per
 * event-loop turn; tests provide their own writer to read the lines.
 */
export class AccessLogWriter extends Context.Reference<LineWriter>("vdb/server/AccessLogWriter", {
  defaultValue: stderrLineWriter
}) {}

/** Long enough for any real route; a 10k-character probe must not become a 10k-character line. */
const MAX_LOGGED_PATH = 512
const pathOf = (url: string) => {
  const q = url.indexOf("?")
  const path = q === -1 ? url : url.slice(0, q)
  return path.length > MAX_LOGGED_PATH ? `${path.slice(0, MAX_LOGGED_PATH)}…` : path
}

/** A client's `x-request-id` is trusted only in this shape; anything else could forge or flood log lines. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/
const requestIdOf = (header: string | undefined) =>
  header !== undefined && REQUEST_ID.test(header) ? header : randomUUID()

/**
 * The Node response a request is answered on, when there is one (not for a lazily created
 * response, an upgrade, whose `response` is a function, nor a request built in process).
 */
const nodeResponseOf = (request: HttpServerRequest.HttpServerRequest): ServerResponse | undefined =>
  typeof (request as { readonly response?: unknown }).response === "object"
    ? NodeHttpServerRequest.toServerResponse(request) as ServerResponse
    : undefined

/**
 * `new Date().toISOString()`, from a prefix cached for the current second:
 * building a `Date` and formatting it was the largest part of the line's cost
 * (profiled in the relay, docs/gateway.md "The throughput floor with the log
 * on"). The same text: `YYYY-MM-DDTHH:MM:SS.mmmZ` in UTC.
 */
let prefixSecond = -1
let prefix = ""
export const isoTimestamp = (now: number = Date.now()): string => {
  const second = Math.floor(now / 1000)
  if (second !== prefixSecond) {
    prefixSecond = second
    prefix = new Date(second * 1000).toISOString().slice(0, 20)
  }
  const ms = now - second * 1000
  return `${prefix}${ms < 10 ? "00" : ms < 100 ? "0" : ""}${ms}Z`
}

/**
 * A duration in milliseconds rounded to the microsecond, as JSON would print
 * `Math.round(ms * 1000) / 1000` (`1.2`, `0.05`, `3`), formatted from integers:
 * a fractional number's shortest decimal form costs more than the rest of the line.
 */
export const durationText = (ms: number): string => {
  const micros = Math.round(ms * 1000)
  if (!Number.isSafeInteger(micros) || micros < 0) return String(micros / 1000)
  const whole = Math.floor(micros / 1000)
  let fraction = micros - whole * 1000
  if (fraction === 0) return `${whole}`
  let digits = 3
  while (fraction % 10 === 0) {
    fraction /= 10
    digits--
  }
  const text = `${fraction}`
  return `${whole}.${text.length < digits ? "0".repeat(digits - text.length) + text : text}`
}

/**
 * The line `Logger.formatJson` wrote for `Effect.logInfo("request")` with
 * these annotations (same fields, order and types), built as one string:
 * going through the logger cost about 25 µs a request, a third of the
 * gateway's budget. The request id is a UUID or matched REQUEST_ID, and the
 * service name and level are fixed, so only method and route need escaping.
 */
const lineOf = (
  serviceJson: string,
  fiberId: number,
  requestId: string,
  method: string,
  url: string,
  status: number,
  started: number,
  traceId?: string
) =>
  `{"message":"request","level":"INFO","timestamp":"${isoTimestamp()}","annotations":{"service":${serviceJson},"requestId":"${requestId}","method":${
    JSON.stringify(method)
  },"route":${JSON.stringify(pathOf(url))},"status":${status},"durationMs":${
    durationText(performance.now() - started)
  }${traceId === undefined ? "" : `,"traceId":"${traceId}"`}},"spans":{},"fiberId":"#${fiberId}"}`

/**
 * One JSON line per request on stderr (the logger's format): request id,
 * service, method, path (never the query string, which may carry
 * credentials), the status actually sent and duration. Headers and bodies are
 * never logged. Written at INFO, so `VDB_LOG_LEVEL` above it silences it.
 *
 * On a Node server the line has the status Node sent: the handler's response
 * is not the last word, since pre-response handlers run after it (the MCP
 * server turns a notification's 200 into 202 in one, and the line said 200),
 * and a client that left, or a source that broke off, is 499 or 502 as below
 * the router. This middleware wraps the write, so the response is ended by the
 * time the exit is seen; a response still open then is logged when it closes.
 *
 * `relays`: the service answers with relayed Node streams through the router
 * (the gateway's Kiro relay), whose source breaking off is 502, not 499. It
 * costs a pre-response handler a request, so only the gateway asks for it.
 */
export const accessLog = (service: string, options?: { readonly relays?: boolean }) => {
  const serviceJson = JSON.stringify(service)
  const relays = options?.relays === true
  const record = httpRequestRecorder(service)
  return <E, R>(
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.withFiber((requestFiber) => {
      const request = Context.getUnsafe(requestFiber.context, HttpServerRequest.HttpServerRequest)
      const tracingOn = requestFiber.getRef(TracingOn)
      const started = performance.now()
      const requestId = requestIdOf(request.headers["x-request-id"])
      // Runs after the handler and before the write, which this middleware wraps: by the time the
      // exit below is seen, a relayed body that broke off has already been written out and failed.
      if (relays) HttpEffect.appendPreResponseHandlerUnsafe(requestFiber.context, watchRelayedBody)
      // A request the sampler did not keep has no span (`unsampledRequestOf`): its parent is set here, so what
      // runs below is not kept either. Set on the fiber, as the platform sets its request span, not provided
      // around `app`, whose exit would restore the context without the route the router leaves in it.
      const unsampled = tracingOn ? unsampledRequestOf(request) : undefined
      if (unsampled !== undefined) {
        requestFiber.setContext(Context.add(requestFiber.context, Tracer.ParentSpan, unsampled))
      }
      return Effect.onExit(app, (exit) =>
        Effect.withFiber((fiber) => {
          // The router left the matched route in the fiber's context until the request ends: its
          // template, never the raw path, is the metrics label.
          const context = fiber.context
          const route = Context.getOrUndefined(context, HttpRouter.RouteContext)?.route.path ?? UNMATCHED_ROUTE
          const silenced = LogLevel.isGreaterThan(fiber.getRef(References.MinimumLogLevel), "Info")
          const writer = fiber.getRef(AccessLogWriter)
          const traceId = tracingOn ? tracedRequest(context, request.method, route) : undefined
          const write = (status: number) => {
            record(context, route, request.method, status, (performance.now() - started) / 1000)
            if (!silenced) {
              writer.write(
                lineOf(serviceJson, fiber.id, requestId, request.method, request.url, status, started, traceId)
              )
            }
          }
          const response = nodeResponseOf(request)
          if (response !== undefined) {
            if (response.writableEnded) write(response.statusCode)
            else if (response.destroyed) write(brokenOff.has(response) ? 502 : 499)
            else response.once("close", () => write(loggedStatus(response)))
          } else if (Exit.isSuccess(exit)) write(exit.value.status)
          // A failure was answered by `causeResponse` (404, 499, 503, 500...): log the status it sent.
          else return Effect.map(HttpServerError.causeResponse(exit.cause), ([response]) => write(response.status))
          return Effect.void
        }))
    })
}

/**
 * With tracing on, the platform's request span (`HttpMiddleware.tracer`, around this middleware) is
 * named `METHOD /route/{template}` once the route is known (the platform names it by method alone,
 * before routing; a raw path would carry ids), and its trace id goes in the access-log line.
 */
const tracedRequest = (context: Context.Context<never>, method: string, route: string): string | undefined => {
  const span = Context.getOrUndefined(context, Tracer.ParentSpan)
  if (span === undefined || span._tag !== "Span" || !span.sampled) return undefined
  ;(span as { name: string }).name = `${method} ${route}`
  return span.traceId
}

/**
 * Responses cut short because what they relayed broke off (an upstream that dropped its stream,
 * or sent fewer bytes than its length promised): logged 502, not the 499 of a client that left.
 * The client saw the status line go out, then a truncated body.
 */
const brokenOff = new WeakSet<ServerResponse>()

/** Marks a response as cut short by its source, before it is destroyed. */
export const markBrokenOff = (response: ServerResponse): void => {
  brokenOff.add(response)
}

/**
 * A relayed body (a Node stream, as the Kiro relay sends) that fails while the response is still
 * open broke off at its source: the platform's pipeline then destroys the response, which is 502
 * in the line, not a client's 499. A client that leaves first closes the response before its
 * source is destroyed, so that stays 499.
 */
const watchRelayedBody = (
  request: HttpServerRequest.HttpServerRequest,
  answer: HttpServerResponse.HttpServerResponse
) => {
  const body = answer.body
  if (body._tag === "Raw" && body.body instanceof Readable) {
    const response = nodeResponseOf(request)
    if (response !== undefined) {
      body.body.once("error", () => {
        if (!response.destroyed) markBrokenOff(response)
      })
    }
  }
  return Effect.succeed(answer)
}

/** The status a finished response's line reports: the one sent, or 502 / 499 for one that closed before it was complete. */
const loggedStatus = (response: ServerResponse) =>
  response.writableFinished ? response.statusCode : brokenOff.has(response) ? 502 : 499

/**
 * The same line for a request answered below the router
 * (`src/server/InterceptingServer.ts`): the same fields and rules, the
 * status read from the Node response once it has closed (499 when it closed
 * before the response was complete, 502 when its source broke off), the fiber that answered it. The level
 * and the writer are read once from the context the service was built with.
 */
export const nodeAccessLog = (service: string, context: Context.Context<never>) => {
  const serviceJson = JSON.stringify(service)
  const silenced = LogLevel.isGreaterThan(Context.get(context, References.MinimumLogLevel), "Info")
  const writer = Context.get(context, AccessLogWriter)
  const record = httpRequestRecorder(service)
  /**
   * At the request's start, with the route template it matched; the returned function records it
   * in the metrics and writes its line once the response has closed.
   */
  return (
    request: IncomingMessage,
    route: string
  ): (response: ServerResponse, fiberId: number, traceId?: string) => void => {
    const started = performance.now()
    const header = request.headers["x-request-id"]
    const requestId = silenced ? "" : requestIdOf(typeof header === "string" ? header : undefined)
    return (response, fiberId, traceId) => {
      const status = loggedStatus(response)
      record(context, route, request.method ?? "", status, (performance.now() - started) / 1000)
      if (!silenced) {
        writer.write(
          lineOf(serviceJson, fiberId, requestId, request.method ?? "", request.url ?? "", status, started, traceId)
        )
      }
    }
  }
}
