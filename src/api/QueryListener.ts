import { Clock, Context, Effect, Exit, Layer } from "effect"
import type { HttpServerResponse } from "effect/http"
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http"
import { nodeAccessLog } from "../server/AccessLog.ts"
import { resolveClientAddress, TrustedProxies } from "../server/ClientAddress.ts"
import { ServerInterceptors } from "../server/InterceptingServer.ts"
import { replayedRequest } from "../server/ReplayedRequest.ts"
import { makeFastPathGate } from "./FastPathGate.ts"
import { queryKeyOfBody } from "./QueryAnswers.ts"
import { listensBelowRouter, makeQueryResponses, plainQueryRequest, QUERY_ROUTE } from "./QueryFastPath.ts"

/** The service these routes are served as (`src/server/Services.ts`), as its access log names it. */
const SERVICE = "api"
/** What the gate answers when the request is not this path's to answer: it goes to the router. */
const PASS = Symbol("pass")
const pass = Effect.succeed(PASS)

/** Writes a finished response as the platform would: its status and headers, and the body in the same write. */
const send = (response: ServerResponse, answer: HttpServerResponse.HttpServerResponse) => {
  if (response.destroyed) return
  try {
    response.writeHead(answer.status, answer.headers as OutgoingHttpHeaders)
    response.end(answer.body._tag === "Uint8Array" ? answer.body.body : undefined)
  } catch {
    response.destroy()
  }
}

/**
 * The cached `POST /v1/query` answered below Effect's HTTP server, as the gateway answers its
 * relay (`src/gateway/RelayListener.ts`). Measured (docs/api.md, "Package queries under load"),
 * once the HttpApi was out of the way (`QueryFastPath`), the platform's per-request machinery (its
 * request and response objects, the request fiber, the middleware chain, the response conversion)
 * was the larger part of what a cached query cost beyond writing its bytes. Here a Node listener
 * takes the requests `QueryFastPath` would (`plainQueryRequest`), reads the body, keys it
 * (`queryKeyOfBody`) and runs the same gate (`FastPathGate.ts`: authentication, admission,
 * rate-limit headers, the usage-log entry) with the same finished responses
 * (`makeQueryResponses`), writes the answer with one `writeHead` and `end`, and records the same
 * access-log line and metrics (`nodeAccessLog`, route `/v1/query`). Anything else, and any doubt
 * (a body it does not key, a miss, a credential or admission that does not pass, a failure) is
 * forwarded to the router with the body read again from a stand-in request (`replayedRequest`):
 * the HttpApi then answers it as if nothing had looked at it. Active only where
 * `listensBelowRouter` says (an `InterceptingServer`, tracing off); elsewhere `QueryFastPath`
 * answers the same requests in the router.
 */
export const QueryListener = Layer.effectDiscard(Effect.gen(function*() {
  if (!(yield* listensBelowRouter)) return
  const interceptors = (yield* ServerInterceptors)!
  const context = yield* Effect.context<never>()
  const gate = yield* makeFastPathGate
  const responsesOf = yield* makeQueryResponses
  const log = nodeAccessLog(SERVICE, context)
  const run = Effect.runForkWith(context)
  const clock = Context.get(context, Clock.Clock)
  const trusted = Context.get(context, TrustedProxies)

  const answer = (
    request: IncomingMessage,
    response: ServerResponse,
    authorization: string,
    body: Buffer,
    started: number,
    atMillis: number,
    settle: (fiberId: number | undefined) => void
  ) => {
    const key = queryKeyOfBody(body.toString("utf8"))
    if (key === undefined) return settle(undefined)
    const fiber = run(gate({
      request: { method: "POST", headers: request.headers },
      authorization,
      fallThrough: pass,
      route: QUERY_ROUTE,
      identifier: undefined,
      started,
      atMillis,
      clientAddress: () =>
        resolveClientAddress(trusted, request.socket.remoteAddress, request.headers["x-forwarded-for"]) ?? null,
      responses: () => responsesOf(key, request.headers["accept-encoding"])
    }))
    fiber.addObserver((exit) => {
      if (Exit.isSuccess(exit) && exit.value !== PASS) {
        settle(fiber.id)
        send(response, exit.value)
      } else settle(undefined)
    })
  }

  interceptors.push((request, response, forward) => {
    if (request.httpVersionMajor !== 1 || request.headers.expect !== undefined) return false
    const authorization = plainQueryRequest(request.method, request.url, request.headers)
    if (authorization === undefined) return false
    const started = performance.now()
    const atMillis = clock.currentTimeMillisUnsafe()
    const logged = log(request, QUERY_ROUTE)
    const chunks: Array<Buffer> = []
    // Answered here: logged once the response has closed (499 for a client that left before it).
    // Forwarded: the router's access log has it.
    let answeredBy: number | undefined = 0
    response.once("close", () => {
      if (answeredBy !== undefined) logged(response, answeredBy)
    })
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.once("end", () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
      answer(request, response, authorization, body, started, atMillis, (fiberId) => {
        answeredBy = fiberId
        if (fiberId === undefined) forward(replayedRequest(request, body), response)
      })
    })
    return true
  })
}))
