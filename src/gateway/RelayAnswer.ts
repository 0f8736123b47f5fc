import { Cause, Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { randomUUID } from "node:crypto"
import type { Readable } from "node:stream"
import { GatewayInternalError } from "../../schema/GatewayError.ts"
import { BackendUnavailable } from "../cache/BackendUnavailable.ts"
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from "../db/DatabaseUnavailable.ts"
import { type Dialect, encodeFailure } from "./dialects/Dialect.ts"
import { describeFailure, type GatewayFailure } from "./dialects/GatewayFailure.ts"
import { allowVerdict, type Verdict, verdictOfRefusal } from "./pipeline/Verdict.ts"
import { firewallHeaders } from "./ResponseHeaders.ts"

const RETRY_AFTER = String(DATABASE_RETRY_AFTER_SECONDS)

/**
 * How a gateway route answers: the answer the relay builds (bytes or a stream)
 * and the one place a failure becomes an answer in the route's dialect.
 */

/**
 * What an inference route answers: a status, headers (lower-case names, in a
 * record the answer owns) and the body, bytes or a stream. The relay listener
 * writes it to the Node response as it is (`RelayListener.ts`); on the router
 * it becomes an `HttpServerResponse` (`toServerResponse`), with the same
 * headers. Not building that response on the hot path saves its two copies of
 * the headers (`Headers.fromInput`, then its own spread), which measured
 * 4 µs of a 190 µs request in a profile (docs/gateway.md, "The gateway's own work").
 */
export interface RelayAnswer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: Uint8Array | Readable
}

/**
 * An answer with bytes: the length and, when the headers name none, the
 * content type set as `HttpServerResponse.uint8Array` would set them, so both
 * paths send the same headers.
 */
export const bytesAnswer = (status: number, headers: Record<string, string>, body: Uint8Array): RelayAnswer => {
  if (headers["content-type"] === undefined) headers["content-type"] = "application/octet-stream"
  headers["content-length"] = String(body.length)
  return { status, headers, body }
}

/** The answer as the router sends it. */
export const toServerResponse = (answer: RelayAnswer): HttpServerResponse.HttpServerResponse =>
  answer.body instanceof Uint8Array
    ? HttpServerResponse.uint8Array(answer.body, { status: answer.status, headers: answer.headers })
    : HttpServerResponse.raw(answer.body, { status: answer.status, headers: answer.headers })

/** Per-request state the refusal renderer needs. */
export interface Exchange {
  readonly requestId: string
  readonly started: number
  dialect: Dialect
  verdict: Verdict | undefined
}

export const newExchange = (dialect: Dialect): Exchange => ({
  requestId: randomUUID(),
  started: performance.now(),
  dialect,
  verdict: undefined
})

/** A refusal carries the firewall headers: what the inspection knew when it refused, else the bare block. */
const blockVerdict = (failure: GatewayFailure): Verdict | undefined =>
  failure._tag === "PolicyRefusal"
    ? verdictOfRefusal(failure) ??
      { ...allowVerdict, decision: "block", rules: failure.blockedBy !== undefined ? [failure.blockedBy] : [] }
    : undefined

/** The one place a failure becomes an answer, in the dialect of the route called. */
export const failureAnswer = (exchange: Exchange, failure: GatewayFailure): RelayAnswer => {
  const view = describeFailure(failure)
  const headers = firewallHeaders(exchange.requestId, exchange.verdict ?? blockVerdict(failure))
  // The rest of an oversized body is never read: close rather than drain it.
  if (view.status === 413) headers["connection"] = "close"
  // A store the firewall needs (keys, policies, rules) cannot be reached: ask the client to come back.
  if (view.status === 503) headers["retry-after"] = RETRY_AFTER
  // RFC 7694: a 415 for a body's coding names the codings taken.
  if (view.code === "unsupported_content_encoding") headers["accept-encoding"] = "identity"
  headers["content-type"] = "application/json"
  return bytesAnswer(view.status, headers, Buffer.from(encodeFailure(exchange.dialect, view)))
}

/** A failure on a route the router serves (listings, nonces, Kiro, the fallback). */
export const renderFailure = (exchange: Exchange, failure: GatewayFailure): HttpServerResponse.HttpServerResponse =>
  toServerResponse(failureAnswer(exchange, failure))

const internalError = new GatewayInternalError()
const databaseUnavailable = new BackendUnavailable({ backend: "database" })

/** Typed failures and defects alike leave in the route's dialect; interruptions (client gone) propagate. */
export const answering = <A, R>(
  exchange: Exchange,
  effect: Effect.Effect<A, GatewayFailure, R>,
  render: (exchange: Exchange, failure: GatewayFailure) => A
): Effect.Effect<A, never, R> =>
  Effect.catchCause(effect, (cause) => {
    if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
    const failure = Cause.findErrorOption(cause)
    if (failure._tag === "Some") return Effect.succeed(render(exchange, failure.value))
    // A store read that died because the database is away is a 503 the client may retry, not a bug.
    if (isDatabaseUnavailable(Cause.squash(cause))) {
      return Effect.as(
        Effect.logWarning("gateway request failed: the database cannot be reached"),
        render(exchange, databaseUnavailable)
      )
    }
    return Effect.as(
      Effect.logError("gateway request failed", cause),
      render(exchange, internalError)
    )
  })
