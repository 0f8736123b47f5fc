import { Agent, type Dispatcher, errors } from "@effect/platform-node/Undici"
import { Context, Duration, Effect, Layer } from "effect"
import { Hex } from "effect/encoding"
import { EventEmitter } from "node:events"
import type { IncomingHttpHeaders } from "node:http"
import type { Readable } from "node:stream"
import { ProviderCredentialInvalid, UpstreamTimeout, UpstreamUnreachable } from "../../schema/GatewayError.ts"
import { TracingOn, unsampledParent } from "../observability/Tracing.ts"

export interface UpstreamRequest {
  /** Slug, for error messages. */
  readonly provider: string
  readonly origin: string
  /** Path and query. */
  readonly path: string
  readonly method: "GET" | "POST"
  readonly headers: Record<string, string | Array<string>>
  readonly body: Uint8Array | undefined
}

export interface StreamedResponse {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  /** Destroying it aborts the upstream request. */
  readonly body: Readable
}

export interface BufferedResponse {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
  /** `performance.now()` when the headers arrived (time to first byte in /metrics). */
  readonly headersAt?: number
}

/** What undici says, before connecting, of a header value it refuses (CR, LF, NUL, …); its message names the header, never the value. */
const INVALID_HEADER = /^invalid .+ header$/

/**
 * A header value undici refuses can only be the stored provider key: the client's headers were parsed
 * by Node's own server, which refuses such values, and default headers are checked when registered.
 * Keys are checked when stored (`vault/ProviderKeyValue.ts`), so this is a key stored before that
 * check: nothing was sent, and the network is not to blame. Neither the error nor the value is logged.
 */
const isInvalidHeader = (error: Error) =>
  error instanceof errors.InvalidArgumentError && INVALID_HEADER.test(error.message)

type SendFailure = UpstreamUnreachable | ProviderCredentialInvalid

const sendFailure = (provider: string, error: Error): SendFailure =>
  isInvalidHeader(error) ? new ProviderCredentialInvalid({ provider }) : new UpstreamUnreachable({ provider })

const failure = (provider: string, error: Error): SendFailure | UpstreamTimeout =>
  error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError
    ? new UpstreamTimeout({ provider })
    : sendFailure(provider, error)

/**
 * A buffered call gets the limit for the headers and again for the body:
 * providers send a non-streamed body at once, so this is the overall bound in
 * practice, without a timer of our own per request.
 */
const bufferedOptions = (request: UpstreamRequest, timeoutMs: number): Dispatcher.DispatchOptions => ({
  origin: request.origin,
  path: request.path,
  method: request.method,
  headers: request.headers,
  body: request.body ?? null,
  headersTimeout: timeoutMs,
  bodyTimeout: timeoutMs
})

/**
 * Collects a whole response straight from undici's dispatch callbacks: no
 * response stream, no async resource, no promise per request.
 */
class BufferingHandler implements Dispatcher.DispatchHandler {
  readonly provider: string
  readonly resume: (effect: Effect.Effect<BufferedResponse, SendFailure | UpstreamTimeout>) => void
  controller: Dispatcher.DispatchController | undefined = undefined
  aborted = false
  status = 0
  headers: IncomingHttpHeaders = {}
  headersAt = 0
  chunks: Array<Buffer> = []
  size = 0

  constructor(provider: string, resume: BufferingHandler["resume"]) {
    this.provider = provider
    this.resume = resume
  }

  onRequestStart(controller: Dispatcher.DispatchController) {
    if (this.aborted) controller.abort(new errors.RequestAbortedError())
    else this.controller = controller
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders) {
    // 1xx interim responses are not the answer.
    if (statusCode < 200) return
    this.status = statusCode
    this.headers = headers
    this.headersAt = performance.now()
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer) {
    this.chunks.push(chunk)
    this.size += chunk.length
  }

  onResponseEnd() {
    const chunks = this.chunks
    this.resume(Effect.succeed({
      status: this.status,
      headers: this.headers,
      body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.size),
      headersAt: this.headersAt
    }))
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error) {
    this.resume(Effect.fail(failure(this.provider, error)))
  }

  /** Interruption: the request is aborted wherever it is (queued, sending or receiving). */
  abort() {
    this.aborted = true
    this.controller?.abort(new errors.RequestAbortedError())
  }
}

/**
 * With tracing on, the upstream call's client span, and the W3C `traceparent` that makes the
 * provider's spans its children. A `traceparent` the client sent (forwarded with its other
 * headers) is replaced for this hop: the client's trace is continued by the request's span, whose
 * child this is; its `tracestate` goes on as sent. The span holds the provider's slug, the method,
 * the origin's host and the status (never the path, which may carry a key, nor headers). A stream's
 * span ends when its headers arrive. Off, the client's headers go upstream as they were.
 */
const upstreamSpan =
  <A extends { readonly status: number }, E>(call: (request: UpstreamRequest) => Effect.Effect<A, E>) =>
  (request: UpstreamRequest): Effect.Effect<A, E> =>
    Effect.withFiber((fiber) => {
      const unsampled = unsampledParent(fiber.context)
      return unsampled === undefined ? sampledCall(call, request) : call({
        ...request,
        headers: { ...request.headers, traceparent: `00-${unsampled.traceId}-${randomSpanId()}-00` }
      })
    })

/**
 * A W3C span id (16 hex digits, not all zero) for the hop of an unsampled request. Not a secret:
 * Effect's own span ids come from the same non-cryptographic generator, and `crypto.randomBytes`
 * here cost 7 % of the gateway's CPU under load (measured).
 */
const randomSpanId = (): string => {
  const id = Hex.random(16)
  return id === "0000000000000000" ? randomSpanId() : id
}

const sampledCall = <A extends { readonly status: number }, E>(
  call: (request: UpstreamRequest) => Effect.Effect<A, E>,
  request: UpstreamRequest
): Effect.Effect<A, E> =>
  Effect.useSpan("gateway.upstream", {
    kind: "client",
    attributes: {
      "gateway.provider": request.provider,
      "http.request.method": request.method,
      "server.address": hostOf(request.origin)
    }
  }, (span) =>
    Effect.tap(
      call({
        ...request,
        headers: {
          ...request.headers,
          traceparent: `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`
        }
      }),
      (response) => Effect.sync(() => span.attribute("http.response.status_code", response.status))
    ))

/** An origin's host name, parsed once per origin (a `URL` per sampled call cost more than the rest of its span). */
const hosts = new Map<string, string>()
const hostOf = (origin: string): string => {
  let host = hosts.get(origin)
  if (host === undefined) {
    try {
      host = new URL(origin).hostname
    } catch {
      host = ""
    }
    // Origins are the providers' and the organizations' custom ones: bounded, but not forever.
    if (hosts.size >= 1024) hosts.clear()
    hosts.set(origin, host)
  }
  return host
}

/**
 * Calls providers through one pooled undici agent (keep-alive, no pipelining).
 * Interrupting a call aborts the upstream request. Written against undici's
 * callback APIs (`dispatch` for buffered calls): this is the hot path, and a
 * promise chain plus a racing timeout fiber per request cost more than the
 * rest of the relay.
 */
export class UpstreamClient extends Context.Service<UpstreamClient, {
  /** Resolves with the upstream response headers; the body is relayed as it arrives, unbounded in time. */
  stream(request: UpstreamRequest): Effect.Effect<StreamedResponse, UpstreamUnreachable | ProviderCredentialInvalid>
  /** The whole response, bounded by the non-streaming timeout (502 when exceeded). */
  buffered(
    request: UpstreamRequest
  ): Effect.Effect<BufferedResponse, UpstreamUnreachable | ProviderCredentialInvalid | UpstreamTimeout>
}>()("vdb/gateway/UpstreamClient") {
  /** `ca` replaces the trusted roots (custom providers under a test allowance only; see `custom/VettingPolicy.ts`). */
  static readonly make = (options?: {
    readonly timeout?: Duration.Input | undefined
    readonly ca?: ReadonlyArray<string> | undefined
  }) =>
    Effect.gen(function*() {
      const timeoutMs = Duration.toMillis(Duration.fromInputUnsafe(options?.timeout ?? "120 seconds"))
      const agent = yield* Effect.acquireRelease(
        Effect.sync(() =>
          new Agent({
            keepAliveTimeout: 30_000,
            pipelining: 1,
            connect: options?.ca !== undefined && options.ca.length > 0
              ? { timeout: 10_000, ca: [...options.ca] }
              : { timeout: 10_000 }
          })
        ),
        (agent) => Effect.promise(() => agent.close().catch(() => undefined))
      )
      // Streams are not bounded in time.
      const streamOptions = (request: UpstreamRequest, signal: EventEmitter): Dispatcher.RequestOptions => ({
        origin: request.origin,
        path: request.path,
        method: request.method,
        headers: request.headers,
        body: request.body ?? null,
        signal,
        headersTimeout: 0,
        bodyTimeout: 0
      })

      const stream = (request: UpstreamRequest) =>
        Effect.callback<StreamedResponse, SendFailure>((resume) => {
          // An emitter, not an AbortController: undici accepts either, and this one is cheaper per request.
          const abort = new EventEmitter()
          agent.request(streamOptions(request, abort), (error, response) => {
            if (error) resume(Effect.fail(sendFailure(request.provider, error)))
            else resume(Effect.succeed({ status: response.statusCode, headers: response.headers, body: response.body }))
          })
          return Effect.sync(() => abort.emit("abort"))
        })
      const buffered = (request: UpstreamRequest) =>
        Effect.callback<BufferedResponse, SendFailure | UpstreamTimeout>((resume) => {
          const handler = new BufferingHandler(request.provider, resume)
          agent.dispatch(bufferedOptions(request, timeoutMs), handler)
          return Effect.sync(() => handler.abort())
        })
      if (!(yield* TracingOn)) return UpstreamClient.of({ stream, buffered })
      return UpstreamClient.of({ stream: upstreamSpan(stream), buffered: upstreamSpan(buffered) })
    })

  static readonly layer = Layer.effect(UpstreamClient)(UpstreamClient.make())
  static readonly layerWith = (options: { readonly timeout?: Duration.Input | undefined }) =>
    Layer.effect(UpstreamClient)(UpstreamClient.make(options))
}
