import { Agent, type Dispatcher, errors } from "@effect/platform-node/Undici"
import { Context, Duration, Effect, Layer } from "effect"
import { EventEmitter } from "node:events"
import type { IncomingHttpHeaders } from "node:http"
import type { Readable } from "node:stream"
import { UpstreamTimeout, UpstreamUnreachable } from "../../../schema/GatewayError.ts"

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
}

/**
 * Calls providers through one pooled undici agent (keep-alive, no pipelining).
 * Interrupting a call aborts the upstream request. Written against undici's
 * callback API: this is the hot path, and a promise chain plus a racing
 * timeout fiber per request cost more than the rest of the relay.
 */
export class UpstreamClient extends Context.Service<UpstreamClient, {
  /** Resolves with the upstream response headers; the body is relayed as it arrives, unbounded in time. */
  stream(request: UpstreamRequest): Effect.Effect<StreamedResponse, UpstreamUnreachable>
  /** The whole response, bounded by the non-streaming timeout (502 when exceeded). */
  buffered(request: UpstreamRequest): Effect.Effect<BufferedResponse, UpstreamUnreachable | UpstreamTimeout>
}>()("vdb/gateway/UpstreamClient") {
  static readonly make = (options?: { readonly timeout?: Duration.Input | undefined }) =>
    Effect.gen(function*() {
      const timeoutMs = Duration.toMillis(Duration.fromInputUnsafe(options?.timeout ?? "120 seconds"))
      const agent = yield* Effect.acquireRelease(
        Effect.sync(() => new Agent({ keepAliveTimeout: 30_000, pipelining: 1, connect: { timeout: 10_000 } })),
        (agent) => Effect.promise(() => agent.close().catch(() => undefined))
      )
      const requestOptions = (
        request: UpstreamRequest,
        signal: EventEmitter,
        bounded: boolean
      ): Dispatcher.RequestOptions => ({
        origin: request.origin,
        path: request.path,
        method: request.method,
        headers: request.headers,
        body: request.body,
        signal,
        // Streams are not bounded in time. A buffered call gets the limit for the headers and again
        // for the body: providers send a non-streamed body at once, so this is the overall bound in
        // practice, without a timer of our own per request.
        headersTimeout: bounded ? timeoutMs : 0,
        bodyTimeout: bounded ? timeoutMs : 0
      })
      const failure = (provider: string, error: Error) =>
        error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError
          ? new UpstreamTimeout({ provider })
          : new UpstreamUnreachable({ provider })

      return UpstreamClient.of({
        stream: (request) =>
          Effect.callback<StreamedResponse, UpstreamUnreachable>((resume) => {
            // An emitter, not an AbortController: undici accepts either, and this one is cheaper per request.
            const abort = new EventEmitter()
            agent.request(requestOptions(request, abort, false), (error, response) => {
              if (error) resume(Effect.fail(new UpstreamUnreachable({ provider: request.provider })))
              else resume(Effect.succeed({ status: response.statusCode, headers: response.headers, body: response.body }))
            })
            return Effect.sync(() => abort.emit("abort"))
          }),

        buffered: (request) =>
          Effect.callback<BufferedResponse, UpstreamUnreachable | UpstreamTimeout>((resume) => {
            const abort = new EventEmitter()
            agent.request(requestOptions(request, abort, true), (error, response) => {
              if (error) return resume(Effect.fail(failure(request.provider, error)))
              const chunks: Array<Buffer> = []
              let size = 0
              response.body.on("data", (chunk: Buffer) => {
                chunks.push(chunk)
                size += chunk.length
              })
              response.body.on("error", (error) => resume(Effect.fail(failure(request.provider, error))))
              response.body.on("end", () =>
                resume(Effect.succeed({
                  status: response.statusCode,
                  headers: response.headers,
                  body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)
                }))
              )
            })
            return Effect.sync(() => abort.emit("abort"))
          })
      })
    })

  static readonly layer = Layer.effect(UpstreamClient)(UpstreamClient.make())
  static readonly layerWith = (options: { readonly timeout?: Duration.Input | undefined }) =>
    Layer.effect(UpstreamClient)(UpstreamClient.make(options))
}
