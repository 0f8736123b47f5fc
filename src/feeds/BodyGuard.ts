import { Effect, Stream } from "effect"
import { Readable } from "node:stream"
import { createGunzip } from "node:zlib"
import { FeedRefused, refused } from "./FeedError.ts"

/** Caps on one fetched body, before and after decompression. */
export interface BodyLimits {
  /** Bytes on the wire. */
  readonly maxBytes: number
  /** Bytes once inflated (gzip). */
  readonly maxInflatedBytes: number
  /** Inflated bytes per compressed byte, checked once `RATIO_FLOOR` bytes came out. */
  readonly maxRatio: number
}

/** Below this much output, no ratio is judged: a tiny file of a repeated byte compresses 1000:1 legitimately. */
const RATIO_FLOOR = 1024 * 1024

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`

/**
 * The body as it arrives, refused as soon as it passes the size cap, or when
 * it ends short of (or past) what its Content-Length announced: a transfer
 * cut half-way must never read as a complete, shorter file.
 */
export const guardBody = <E>(
  body: Stream.Stream<Uint8Array, E>,
  limits: BodyLimits,
  contentLength: number | undefined
): Stream.Stream<Uint8Array, FeedRefused> =>
  Stream.suspend(() => {
    let seen = 0
    const cut = () =>
      contentLength !== undefined && seen < contentLength
        ? refused(
          "LengthMismatch",
          `the body ended after ${seen} of the ${contentLength} bytes its Content-Length announced`
        )
        : refused("Truncated", `the connection closed after ${seen} bytes, before the body was complete`)
    return body.pipe(
      Stream.mapError(cut),
      Stream.mapEffect((chunk) => {
        seen += chunk.length
        if (seen > limits.maxBytes) {
          return Effect.fail(refused("TooLarge", `the body passed the cap of ${mib(limits.maxBytes)}`))
        }
        if (contentLength !== undefined && seen > contentLength) {
          return Effect.fail(
            refused("LengthMismatch", `the body is longer than the ${contentLength} bytes its Content-Length announced`)
          )
        }
        return Effect.succeed(chunk)
      }),
      Stream.concat(
        Stream.suspend(() => contentLength !== undefined && seen !== contentLength ? Stream.fail(cut()) : Stream.empty)
      )
    )
  })

/**
 * A gzip body inflated as it streams, refused as a bomb when the output
 * passes `maxInflatedBytes` or grows more than `maxRatio` times the input;
 * a stream that stops before gzip's own end is `Truncated`, bytes that are
 * not gzip are `Corrupt`.
 */
export const gunzipGuarded = (
  compressed: Stream.Stream<Uint8Array, FeedRefused>,
  limits: BodyLimits
): Stream.Stream<Uint8Array, FeedRefused> =>
  Stream.unwrap(Effect.gen(function*() {
    let consumed = 0
    let produced = 0
    const counted = Stream.tap(compressed, (chunk) =>
      Effect.sync(() => {
        consumed += chunk.length
      }))
    const input = yield* Stream.toAsyncIterableEffect(counted)
    const gunzip = createGunzip({ chunkSize: 64 * 1024 })
    const source = Readable.from(input)
    // A failure on the input side (a refused or cut body) ends the inflation with that reason.
    let inputFailure: FeedRefused | undefined
    source.on("error", (cause) => {
      inputFailure = cause instanceof FeedRefused ? cause : refused("Truncated", "the body stopped before its end")
      gunzip.destroy(inputFailure)
    })
    source.pipe(gunzip)
    async function* inflated(): AsyncGenerator<Uint8Array> {
      try {
        for await (const chunk of gunzip as AsyncIterable<Uint8Array>) {
          produced += chunk.length
          if (produced > limits.maxInflatedBytes) {
            throw refused("CompressionBomb", `the gzip body inflates past the cap of ${mib(limits.maxInflatedBytes)}`)
          }
          if (produced > RATIO_FLOOR && produced > consumed * limits.maxRatio) {
            throw refused(
              "CompressionBomb",
              `the gzip body inflates more than ${limits.maxRatio} times (${mib(produced)} from ${consumed} bytes)`
            )
          }
          yield chunk
        }
      } finally {
        source.destroy()
        gunzip.destroy()
      }
    }
    return Stream.fromAsyncIterable({ [Symbol.asyncIterator]: inflated }, (cause): FeedRefused => {
      if (inputFailure !== undefined) return inputFailure
      if (cause instanceof FeedRefused) return cause
      const code = (cause as { code?: unknown } | undefined)?.code
      return code === "Z_BUF_ERROR"
        ? refused("Truncated", "the gzip stream ends before its end (a cut transfer)")
        : refused("Corrupt", "the body is not valid gzip")
    })
  }))
