import { Context, Effect, Exit, Layer, Option, Tracer } from "effect"
import type { Fiber } from "effect"
import { FindMyWay, Headers, HttpTraceContext } from "effect/http"
import type { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import type { IncomingMessage, ServerResponse } from "node:http"
import { Readable } from "node:stream"
import { DECIDED, RootSampler, TracingOn, UnsampledRequest } from "../observability/Tracing.ts"
import { markBrokenOff, nodeAccessLog } from "../server/AccessLog.ts"
import { ServerInterceptors } from "../server/InterceptingServer.ts"
import { ROUTER_CONFIG } from "../server/RouterConfig.ts"
import type { RouteParams } from "./Admission.ts"
import type { RelayRequest } from "./GatewayHandlers.ts"
import type { RelayAnswer } from "./RelayAnswer.ts"

/** An inference handler of `GatewayHandlers`: it answers every request, failures in the route's dialect. */
export type InferenceHandler = (
  request: RelayRequest,
  params: RouteParams
) => Effect.Effect<RelayAnswer>

/** One group's inference endpoints with their handlers, as `GatewayRoutes` mounts them on the router. */
export interface InferenceRoutes {
  readonly group: HttpApiGroup.Constraint
  readonly handlers: Readonly<Record<string, InferenceHandler>>
}

/**
 * The Node request as the relay reads it: headers and body straight from the
 * `IncomingMessage` (`source`), as the handlers already do for the
 * platform's request. The platform's header and body views are never used on
 * this path; they are here for the type, built only if something asks.
 */
class NodeRelayRequest implements RelayRequest {
  readonly source: IncomingMessage
  readonly url: string
  constructor(source: IncomingMessage, url: string) {
    this.source = source
    this.url = url
  }
  get headers() {
    return Headers.fromInput(this.source.headers as Record<string, string>)
  }
  get arrayBuffer(): RelayRequest["arrayBuffer"] {
    return Effect.die(new Error("the relay reads a Node request's body from its source"))
  }
}

// What the platform does with a request body left unread when the response goes out (a refusal before the
// body was read, a 413), copied from `@effect/platform-node`'s `NodeHttpServer` so both paths leave the
// connection the same way: up to this much unread body is drained to keep the connection alive, past it
// the connection closes, and a closing socket gets this long to deliver the response before it is destroyed.
const MAX_DRAIN_BYTES = 256 * 1024
const CLOSE_GRACE_MS = 500

const closesConnection = (request: IncomingMessage): boolean => {
  if (request.complete) return false
  const declared = request.headers["content-length"]
  return declared !== undefined && Number(declared) > MAX_DRAIN_BYTES
}

const closeSocket = (socket: IncomingMessage["socket"]) => {
  if (socket.destroyed) return
  socket.end()
  const timer = setTimeout(() => socket.destroy(), CLOSE_GRACE_MS)
  socket.once("close", () => clearTimeout(timer))
}

const teardownBody = (request: IncomingMessage, response: ServerResponse) => {
  if (request.complete || request.destroyed) return
  const internals = response as unknown as { _last: boolean }
  if (internals._last) {
    // Keeps Node from destroying the socket while body bytes are still arriving (it would reset the connection).
    ;(request as unknown as { _consuming: boolean })._consuming = true
    internals._last = false
    closeSocket(request.socket)
    return
  }
  let bytes = 0
  request.on("data", (chunk: Buffer) => {
    bytes += chunk.length
    if (bytes > MAX_DRAIN_BYTES) {
      request.pause()
      closeSocket(request.socket)
    }
  })
  request.resume()
}

/**
 * Pipes a streamed answer to the client and tears both down if either fails: an upstream that breaks
 * off ends the client's response, and a client that goes away aborts the upstream call (destroying
 * the body does that). This is what `pipeline` does, without the `AbortController` it aborts when
 * every stream ends: that abort's `DOMException`, stack and all, costs about 4 µs a streamed
 * response (docs/gateway.md, "The gateway's own work").
 */
const relayStream = (body: Readable, response: ServerResponse) => {
  const teardown = () => {
    body.destroy()
    response.destroy()
  }
  // The upstream broke off (its socket dropped, or it ended short of its content-length): logged 502.
  body.on("error", () => {
    markBrokenOff(response)
    teardown()
  })
  response.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "ERR_HTTP_CONTENT_LENGTH_MISMATCH") markBrokenOff(response)
    teardown()
  })
  response.once("close", () => {
    if (!body.readableEnded) body.destroy()
  })
  body.pipe(response)
}

/** Writes the relay's answer as the platform would: headers and body in one write, a stream piped. */
const send = (request: IncomingMessage, response: ServerResponse, answer: RelayAnswer) => {
  const body = answer.body
  if (response.destroyed) {
    if (body instanceof Readable) body.destroy()
    return
  }
  // A body still unread (a refusal before reading it, a 413) is drained or the connection closed, as the platform does.
  if (!request.complete) response.prependListener("finish", () => teardownBody(request, response))
  const headers = closesConnection(request) ? { ...answer.headers, connection: "close" } : answer.headers
  response.writeHead(answer.status, headers)
  if (body instanceof Readable) {
    // A length the stream does not keep to fails the response instead of corrupting the connection.
    response.strictContentLength = true
    relayStream(body, response)
  } else response.end(body)
}

/**
 * With tracing on, the request's server span, as the platform's tracer makes it for the routes it
 * answers: named by the route template, continuing a client's W3C `traceparent` (or B3), with the
 * method, route and status (never the path, headers or query). The span ends with the handler's
 * answer, before a streamed body has finished; the upstream call's span is its child.
 *
 * The sampler is asked first: a request it does not keep (90 % at a ratio of 0.1) gets an
 * `UnsampledRequest` as its parent and no span at all, not even an unsampled one (whose
 * attributes, clock reads and end cost more than everything else tracing did for it).
 */
const requestSpan = (
  request: IncomingMessage,
  route: string,
  sample: (parent: Tracer.ExternalSpan | undefined) => boolean
) => {
  const parent = Option.getOrUndefined(HttpTraceContext.fromHeaders(request.headers as Headers.Headers))
  if (!sample(parent)) {
    const unsampled = new UnsampledRequest(parent?.traceId)
    return {
      traceId: unsampled.traceId,
      around: (handled: Effect.Effect<RelayAnswer>) => Effect.provideService(handled, Tracer.ParentSpan, unsampled)
    }
  }
  let traceId: string | undefined
  return {
    get traceId() {
      return traceId
    },
    around: (handled: Effect.Effect<RelayAnswer>) =>
      Effect.useSpan(`POST ${route}`, {
        kind: "server",
        annotations: DECIDED,
        ...(parent !== undefined ? { parent } : {}),
        attributes: { "http.request.method": "POST", "http.route": route }
      }, (span) => {
        traceId = span.traceId
        return Effect.tap(handled, (answer) =>
          Effect.sync(() => span.attribute("http.response.status_code", answer.status))).pipe(
            Effect.withParentSpan(span, { captureStackTrace: false })
          )
      })
  }
}

/**
 * The inference routes answered below Effect's HTTP server. Measured
 * (docs/gateway.md, "The framework floor"): the same relay as one route on
 * `HttpRouter.serve` with the access log reaches 0.61–0.69 of a bare Node
 * relay, while the gateway reaches 0.97 of that floor, so the gateway cannot
 * meet its 80 % target while these routes go through the platform's request
 * handling. Here a Node listener matches the same `GatewayApi` paths with
 * the same router (`FindMyWay`, the services' `ROUTER_CONFIG`), runs the
 * same handler (`GatewayHandlers.inference`) as one fiber, writes its answer,
 * and logs the same access-log line. Only `POST`s to an inference path in
 * origin form are taken; everything else (listings, Kiro, management, health,
 * the fallback, `Expect: 100-continue`) goes to the router, and so does every
 * request when the server is not an `InterceptingServer` (tests that build
 * their own server): both paths give the same answer, which a test checks.
 * The contract (OpenAPI, typed errors, the client) is still `GatewayApi`.
 */
export const relayListener = (service: string, routes: ReadonlyArray<InferenceRoutes>) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const interceptors = yield* ServerInterceptors
    if (interceptors === undefined) return
    const context = yield* Effect.context<never>()
    const log = nodeAccessLog(service, context)
    const run = Effect.runForkWith(context)
    const traced = Context.get(context, TracingOn)
    const sample = Context.get(context, RootSampler)
    const router = FindMyWay.make<{ readonly handler: InferenceHandler; readonly route: string }>(ROUTER_CONFIG)
    for (const { group, handlers } of routes) {
      for (const [id, endpoint] of Object.entries(group.endpoints as Record<string, HttpApiEndpoint.Top>)) {
        router.on(endpoint.method, endpoint.path as FindMyWay.PathInput, {
          handler: handlers[id]!,
          route: endpoint.path
        })
      }
    }

    const answer = (request: IncomingMessage, response: ServerResponse, fiber: Fiber.Fiber<RelayAnswer>) =>
      fiber.addObserver((exit) => {
        if (Exit.isSuccess(exit)) return send(request, response, exit.value)
        // Interrupted: the client went away (499 in the log). Nothing else reaches here (`answering`
        // renders every failure), but a defect must still end the exchange rather than hang it.
        if (!response.headersSent && !response.destroyed) {
          response.writeHead(500)
          response.end()
        } else response.destroy()
      })

    interceptors.push((request, response) => {
      const url = request.url
      if (request.method !== "POST" || url === undefined || url.charCodeAt(0) !== 47 /* "/" */) return false
      if (request.httpVersionMajor !== 1 || request.headers.expect !== undefined) return false
      const found = router.find("POST", url)
      if (found === undefined) return false
      const logged = log(request, found.handler.route)
      const handled = found.handler.handler(new NodeRelayRequest(request, url), found.params as unknown as RouteParams)
      const span = traced ? requestSpan(request, found.handler.route, sample) : undefined
      const fiber = run(span === undefined ? handled : span.around(handled))
      answer(request, response, fiber)
      response.once("close", () => {
        // The client closed before the answer was complete: stop the upstream call (or the stream).
        if (!response.writableEnded) fiber.interruptUnsafe()
        logged(response, fiber.id, span?.traceId)
      })
      return true
    })
  }))
