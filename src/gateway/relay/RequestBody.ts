import { Effect } from "effect"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import type { IncomingMessage } from "node:http"
import { Readable } from "node:stream"
import { GatewayInvalidRequest, RequestTooLarge, UnsupportedContentEncoding } from "../../../schema/GatewayError.ts"
import type { InferenceEnvelope } from "../../../schema/GatewayRequest.ts"
import { declaresOver } from "../../server/BodyCap.ts"

/** Transport limit, not a token limit; not configurable. */
export const MAX_BODY_BYTES = 8 * 1024 * 1024

const unreadable = new GatewayInvalidRequest({ reason: "could not read request body" })
/** The 400 for a body that is not one JSON object. */
export const invalidJson = new GatewayInvalidRequest({ reason: "invalid JSON body" })
const modelRequired = new GatewayInvalidRequest({ reason: "model is required" })
const tooLarge = new RequestTooLarge()
const encoded = new UnsupportedContentEncoding()

/** A `Content-Encoding` other than `identity` (any case, any list): the body's bytes are not its JSON. */
export const isEncoded = (value: string | ReadonlyArray<string> | undefined): boolean => {
  if (value === undefined) return false
  const codings = (typeof value === "string" ? value : value.join(",")).split(",")
  return codings.some((c) => {
    const coding = c.trim().toLowerCase()
    return coding !== "" && coding !== "identity"
  })
}

/**
 * Reads the body from the Node request, refusing as soon as more than the
 * limit has arrived: at most `limit` bytes are ever held.
 */
export const readBody = (
  request: Pick<HttpServerRequest, "source" | "arrayBuffer" | "headers">,
  limit: number = MAX_BODY_BYTES
): Effect.Effect<Buffer, GatewayInvalidRequest | RequestTooLarge | UnsupportedContentEncoding> => {
  if (isEncoded(request.headers["content-encoding"])) return Effect.fail(encoded)
  const source = request.source
  if (!(source instanceof Readable)) {
    // Not served by the Node server (e.g. a web handler in tests): the platform reader enforces no limit here.
    return Effect.flatMap(
      Effect.mapError(request.arrayBuffer, () => unreadable),
      (bytes) => bytes.byteLength > limit ? Effect.fail(tooLarge) : Effect.succeed(Buffer.from(bytes))
    )
  }
  const message = source as IncomingMessage
  if (declaresOver(message.headers, limit)) return Effect.fail(tooLarge)
  if (message.readableEnded) return Effect.fail(unreadable)
  return Effect.callback<Buffer, GatewayInvalidRequest | RequestTooLarge | UnsupportedContentEncoding>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const cleanup = () => {
      message.off("data", onData)
      message.off("end", onEnd)
      message.off("error", onError)
      message.off("aborted", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        cleanup()
        chunks.length = 0
        // Stop reading; the response carries `connection: close` so the rest is never consumed.
        message.pause()
        resume(Effect.fail(tooLarge))
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.succeed(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)))
    }
    const onError = () => {
      cleanup()
      resume(Effect.fail(unreadable))
    }
    message.on("data", onData)
    message.on("end", onEnd)
    message.on("error", onError)
    message.on("aborted", onError)
    return Effect.sync(cleanup)
  })
}

/**
 * Equivalent to decoding `InferenceEnvelope`, by hand: this runs on every
 * inference, and the schema decoder costs more than the rest of the parse.
 */
const envelopeOf = (parsed: Record<string, unknown>): InferenceEnvelope | undefined => {
  const model = parsed.model
  if (typeof model !== "string" || model === "") return undefined
  return { model, stream: parsed.stream, messages: parsed.messages }
}

export interface ParsedBody {
  readonly parsed: Record<string, unknown>
  readonly envelope: InferenceEnvelope
}

/**
 * Decodes the gateway's view of the body: a JSON object with a `model`. The
 * bytes themselves are what goes upstream, so nothing here is re-serialised.
 */
export const parseBody = (body: Buffer): Effect.Effect<ParsedBody, GatewayInvalidRequest> => {
  const parsed = jsonObjectOf(body)
  if (parsed === undefined) return Effect.fail(invalidJson)
  const envelope = envelopeOf(parsed)
  return envelope !== undefined ? Effect.succeed({ parsed, envelope }) : Effect.fail(modelRequired)
}

/** A body that is one JSON object, parsed; anything else (invalid JSON, an array, a scalar) is `undefined`. */
export const jsonObjectOf = (body: Buffer): Record<string, unknown> | undefined => {
  let parsed: unknown
  try {
    // `toString()` without arguments is the direct UTF-8 decode.
    parsed = JSON.parse(body.toString())
  } catch {
    return undefined
  }
  return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
    ? parsed as Record<string, unknown>
    : undefined
}

export const isStreaming = (envelope: InferenceEnvelope): boolean => envelope.stream === true
