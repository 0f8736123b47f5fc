import { Effect } from "effect"
import { brotliCompress, brotliCompressSync, type BrotliOptions, constants, gzip, gzipSync } from "node:zlib"

/**
 * Compression towards the client (spec 2: the gateway strips
 * `Accept-Encoding` upstream and negotiates it itself). Only whole,
 * non-streaming bodies are compressed: an SSE stream is relayed as it
 * arrives, never buffered to compress it.
 */

export type Coding = "br" | "gzip"

/** Below this a compressed body is barely smaller, and costs a compressor run (the Express default). */
export const MIN_COMPRESS_BYTES = 1024
/** Above this the compressor runs on the libuv pool rather than on the event loop. */
const ASYNC_FROM_BYTES = 64 * 1024

// Brotli's default quality (11) is far too slow for a relay. At 4, chat-completion JSON of 2 to 30 KB came out
// within 3 % of gzip's size (smaller at 2 KB, bigger at 8 KB) in 0.5 to 2 times its time (2026-11-27). The API's
// cached answers, compressed once per ingest rather than per response, use 5 (src/api/CachedAnswers.ts).
const BROTLI = { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } }

const qualityOf = (parameters: ReadonlyArray<string>): number => {
  for (const parameter of parameters) {
    const [name, value] = parameter.split("=")
    if (name?.trim().toLowerCase() === "q") {
      const q = Number(value?.trim())
      return Number.isFinite(q) ? q : 0
    }
  }
  return 1
}

/**
 * The coding to answer with (RFC 9110 §12.5.3): the highest-q of `br` and
 * `gzip` (`*` counts for either), br on a tie; none when both are refused.
 */
export const negotiate = (acceptEncoding: string | ReadonlyArray<string> | undefined): Coding | undefined => {
  if (acceptEncoding === undefined) return undefined
  const list = typeof acceptEncoding === "string" ? acceptEncoding : acceptEncoding.join(",")
  if (list === "") return undefined
  let br: number | undefined
  let gz: number | undefined
  let star: number | undefined
  for (const item of list.split(",")) {
    const [coding, ...parameters] = item.split(";")
    const name = coding!.trim().toLowerCase()
    const q = qualityOf(parameters)
    if (name === "br") br = q
    else if (name === "gzip" || name === "x-gzip") gz = q
    else if (name === "*") star = q
  }
  const brQ = br ?? star ?? 0
  const gzQ = gz ?? star ?? 0
  if (brQ <= 0 && gzQ <= 0) return undefined
  return brQ >= gzQ ? "br" : "gzip"
}

/** Whether a relayed body may be compressed: not already encoded, not an event stream, large enough. */
export const compressible = (headers: Readonly<Record<string, string>>, bytes: number): boolean => {
  if (bytes < MIN_COMPRESS_BYTES) return false
  const encoding = headers["content-encoding"]
  if (encoding !== undefined && encoding !== "identity") return false
  const type = headers["content-type"]
  return type === undefined || !type.startsWith("text/event-stream")
}

/** `body` compressed on libuv's pool, off the event loop; brotli at `brotli`'s quality (the relay's by default). */
export const compressAsync = (coding: Coding, body: Uint8Array, brotli: BrotliOptions = BROTLI) =>
  Effect.callback<Uint8Array, Error>((resume) => {
    const done = (error: Error | null, out: Buffer) => resume(error ? Effect.fail(error) : Effect.succeed(out))
    if (coding === "br") brotliCompress(body, brotli, done)
    else gzip(body, done)
  })

/**
 * The body to send and its headers (mutated): compressed with `coding` and
 * `content-encoding` set when that applies; `vary: accept-encoding` on every
 * body that could have been compressed, so caches keep the variants apart.
 * A compressor failure sends the body as it was.
 */
export const compressBody = (
  coding: Coding | undefined,
  body: Uint8Array,
  headers: Record<string, string>
): Effect.Effect<Uint8Array> => {
  if (!compressible(headers, body.length)) return Effect.succeed(body)
  const vary = headers["vary"]
  if (vary === undefined || vary === "") headers["vary"] = "accept-encoding"
  else if (!/accept-encoding|\*/i.test(vary)) headers["vary"] = `${vary}, accept-encoding`
  if (coding === undefined) return Effect.succeed(body)
  const encoded: Effect.Effect<Uint8Array, unknown> = body.length < ASYNC_FROM_BYTES
    ? Effect.try(() => coding === "br" ? brotliCompressSync(body, BROTLI) : gzipSync(body))
    : compressAsync(coding, body)
  return encoded.pipe(
    Effect.map((out): Uint8Array => {
      headers["content-encoding"] = coding
      // The length is the compressed one, set from the body by whatever sends it (`bytesAnswer`, `HttpServerResponse.uint8Array`).
      delete headers["content-length"]
      return out
    }),
    Effect.orElseSucceed(() => body)
  )
}
