import { pipeline, type Readable, Transform } from "node:stream"

/**
 * Passes a streamed body through unchanged while counting its bytes, for the
 * inference log, and showing each chunk to `onChunk` (the token tap of
 * /metrics). Destroying the returned stream (client gone) destroys the
 * source, which aborts the upstream request.
 */
export const countBytes = (
  source: Readable,
  onDone: (bytes: number) => void,
  onChunk?: (chunk: Buffer) => void
): Readable => {
  let bytes = 0
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length
      onChunk?.(chunk)
      callback(null, chunk)
    }
  })
  pipeline(source, counter, () => onDone(bytes))
  return counter
}
