import { mkdtemp, open, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Readable } from "node:stream"
import { Effect, type Scope, Stream } from "effect"
import * as yauzl from "yauzl"
import { type FeedRefused, refused } from "./FeedError.ts"

/** Caps on one archive, judged first on what its central directory declares, then on what inflates. */
export interface ZipCaps {
  readonly maxEntryBytes: number
  readonly maxTotalBytes: number
  /** Inflated bytes per compressed byte, for entries past 1 MiB. */
  readonly maxRatio: number
}

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`

/**
 * A body saved to a temporary file for the scope's lifetime: a zip is read
 * from its end (the central directory), so it cannot be read as it streams.
 */
export const saveTemp = (body: Stream.Stream<Uint8Array, FeedRefused>, name: string): Effect.Effect<string, FeedRefused, Scope.Scope> =>
  Effect.gen(function*() {
    const dir = yield* Effect.acquireRelease(
      Effect.promise(() => mkdtemp(join(tmpdir(), "vdb-feed-"))),
      (d) => Effect.promise(() => rm(d, { recursive: true, force: true }))
    )
    const path = join(dir, name)
    yield* Effect.acquireUseRelease(
      Effect.promise(() => open(path, "w")),
      (file) => Stream.runForEach(body, (chunk) => Effect.promise(() => file.write(chunk))),
      (file) => Effect.promise(() => file.close())
    )
    return path
  })

const unreadable = (cause: unknown): FeedRefused => {
  const message = (cause instanceof Error ? cause.message : String(cause)).slice(0, 160)
  return /central directory|end of file|eof|truncated/i.test(message)
    ? refused("Truncated", `the zip archive ends early (${message})`)
    : refused("Corrupt", `the zip archive cannot be read (${message})`)
}

export interface ZipEntries {
  /** The accepted entries' names, in the archive's order. */
  readonly names: ReadonlyArray<string>
  /** The bytes of entry `index` (any order), refused past its declared size. */
  readonly read: (index: number) => Stream.Stream<Uint8Array, FeedRefused>
}

/**
 * The entries of the zip at `path` that `accept` keeps, open for the scope.
 * Every entry's declared size and ratio is judged before any is inflated, so
 * a bomb is refused without inflating a byte; yauzl checks each entry's size
 * and CRC as it ends.
 */
export const zipEntries = (path: string, accept: (name: string) => boolean, caps: ZipCaps): Effect.Effect<ZipEntries, FeedRefused, Scope.Scope> =>
  Effect.gen(function*() {
    const zip = yield* Effect.acquireRelease(
      Effect.tryPromise({ try: () => yauzl.openPromise(path, { lazyEntries: true, autoClose: false, validateEntrySizes: true }), catch: unreadable }),
      (z) => Effect.sync(() => z.close())
    )
    const kept: Array<yauzl.Entry> = []
    let total = 0
    const all = zip.eachEntry()
    while (true) {
      const next = yield* Effect.tryPromise({ try: () => all.next(), catch: unreadable })
      if (next.done === true) break
      const e = next.value
      if (e.fileName.endsWith("/") || !accept(e.fileName)) continue
      const name = e.fileName.slice(0, 200)
      if (e.isEncrypted()) return yield* refused("Corrupt", `${name}: an encrypted zip entry`)
      if (e.uncompressedSize > caps.maxEntryBytes) return yield* refused("CompressionBomb", `${name} inflates to ${mib(e.uncompressedSize)}, past ${mib(caps.maxEntryBytes)}`)
      if (e.uncompressedSize > 1024 * 1024 && e.uncompressedSize > Math.max(1, e.compressedSize) * caps.maxRatio) {
        return yield* refused("CompressionBomb", `${name} inflates more than ${caps.maxRatio} times`)
      }
      total += e.uncompressedSize
      if (total > caps.maxTotalBytes) return yield* refused("CompressionBomb", `the archive inflates past ${mib(caps.maxTotalBytes)}`)
      kept.push(e)
    }
    const read = (index: number): Stream.Stream<Uint8Array, FeedRefused> =>
      Stream.unwrap(Effect.gen(function*() {
        const e = kept[index]!
        const readable: Readable = yield* Effect.tryPromise({ try: () => zip.openReadStreamPromise(e), catch: unreadable })
        let seen = 0
        return Stream.fromAsyncIterable(readable as AsyncIterable<Uint8Array>, unreadable).pipe(
          Stream.mapEffect((chunk) =>
            (seen += chunk.length) > e.uncompressedSize
              ? Effect.fail(refused("CompressionBomb", `${e.fileName.slice(0, 200)} inflates past its declared size`))
              : Effect.succeed(chunk)
          ),
          Stream.ensuring(Effect.sync(() => readable.destroy()))
        )
      }))
    return { names: kept.map((e) => e.fileName), read }
  })
