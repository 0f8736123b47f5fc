import { Effect, type Scope, Stream } from "effect"
import { mkdtemp, open as openFile, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Readable } from "node:stream"
import * as yauzl from "yauzl"
import { type FeedRefused, refused } from "./FeedError.ts"
import { readDirectory, type ZipEntryInfo } from "./ZipDirectory.ts"
import { isSmall, smallEntryReader } from "./ZipSmallEntries.ts"

/** Caps on a zip archive and its entries, judged on the sizes the archive declares and on what comes out. */
export interface ZipLimits {
  /** Bytes one entry may inflate to (an inner archive counts as one entry). */
  readonly maxEntryBytes: number
  /** Bytes all the entries read from one archive may inflate to. */
  readonly maxInflatedBytes: number
  /** Inflated bytes per compressed byte for an entry past `RATIO_FLOOR`. */
  readonly maxRatio: number
}

/** Below this size an entry's ratio is not judged: a small JSON file of repeated keys compresses 50:1 legitimately. */
const RATIO_FLOOR = 1024 * 1024

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`

/**
 * A scoped temporary folder for a feed's downloads: removed when the run's
 * scope closes, whether it succeeded, failed or was interrupted.
 */
export const tempFolder = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "vdb-feed-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
)

/** Writes a (capped, length-checked) body to `path`; the body's own refusal ends it. */
export const download = (body: Stream.Stream<Uint8Array, FeedRefused>, path: string) =>
  Effect.acquireUseRelease(
    Effect.promise(() => openFile(path, "w")),
    (handle) => Stream.runForEach(body, (chunk) => Effect.promise(() => handle.write(chunk))),
    (handle) => Effect.promise(() => handle.close())
  )

const why = (cause: unknown) => cause instanceof Error ? cause.message : String(cause)

/** yauzl's complaints as a status: an archive without its end (a cut transfer) is `Truncated`, anything else `Corrupt`. */
const unreadable = (cause: unknown): FeedRefused => {
  const message = why(cause)
  return /end of central directory|unexpected EOF|truncated/i.test(message)
    ? refused("Truncated", `the zip archive is cut short (${message.slice(0, 120)})`)
    : refused("Corrupt", `the zip archive cannot be read (${message.slice(0, 120)})`)
}

const openZip = (path: string) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () =>
        yauzl.openPromise(path, {
          lazyEntries: true,
          autoClose: false,
          validateEntrySizes: true,
          strictFileNames: false
        }),
      catch: unreadable
    }),
    (zip) => Effect.sync(() => zip.close())
  )

/** An entry's declared sizes against the caps: a bomb is refused before one byte of it is inflated. */
const judge = (entry: ZipEntryInfo, limits: ZipLimits): FeedRefused | undefined => {
  if (entry.isEncrypted() || !entry.canDecodeFileData()) {
    return refused("Corrupt", `${entry.fileName.slice(0, 200)}: an encrypted or unsupported zip entry`)
  }
  if (entry.uncompressedSize > limits.maxEntryBytes) {
    return refused(
      "CompressionBomb",
      `${entry.fileName.slice(0, 200)} inflates to ${mib(entry.uncompressedSize)}, past the cap of ${
        mib(limits.maxEntryBytes)
      }`
    )
  }
  if (
    entry.uncompressedSize > RATIO_FLOOR && entry.uncompressedSize > Math.max(1, entry.compressedSize) * limits.maxRatio
  ) {
    return refused(
      "CompressionBomb",
      `${entry.fileName.slice(0, 200)} inflates more than ${limits.maxRatio} times (${
        mib(entry.uncompressedSize)
      } from ${entry.compressedSize} bytes)`
    )
  }
  return undefined
}

/**
 * The names of the entries `accept` wants, in the archive's order, once each
 * one's declared size and ratio passed and the declared total is within the
 * cap. Only the central directory is read (the names, not the entries).
 */
export const listEntries = Effect.fnUntraced(
  function*(path: string, accept: (name: string) => boolean, limits: ZipLimits) {
    const { next: nextEntry } = yield* directory(path)
    const names: Array<string> = []
    let total = 0
    while (true) {
      const next = yield* nextEntry
      if (next.done === true) break
      const entry = next.value
      // An entry not accepted is never inflated, so it is not judged (a large README beside the records).
      if (entry.fileName.endsWith("/") || !accept(entry.fileName)) continue
      const bad = judge(entry, limits)
      if (bad !== undefined) return yield* bad
      total += entry.uncompressedSize
      if (total > limits.maxInflatedBytes) {
        return yield* refused("CompressionBomb", `the archive inflates past the cap of ${mib(limits.maxInflatedBytes)}`)
      }
      names.push(entry.fileName)
    }
    return names
  },
  Effect.scoped
)

/**
 * The archive's central directory, entry after entry: read in windows by
 * `ZipDirectory.ts` when it can (`zip` undefined), else through yauzl.
 */
const directory = (path: string) =>
  Effect.gen(function*() {
    const handle = yield* Effect.acquireRelease(
      Effect.tryPromise({ try: () => openFile(path, "r"), catch: unreadable }),
      (h) => Effect.promise(() => h.close())
    )
    const fast = yield* Effect.tryPromise({ try: () => readDirectory(handle), catch: unreadable })
    if (fast !== undefined) {
      const entries = fast[Symbol.asyncIterator]()
      const next = Effect.tryPromise({ try: () => entries.next(), catch: unreadable })
      return { handle, next, zip: undefined }
    }
    const zip = yield* openZip(path)
    const entries = zip.eachEntry()
    const next = Effect.tryPromise({
      try: (): Promise<IteratorResult<ZipEntryInfo>> => entries.next(),
      catch: unreadable
    })
    return { handle, next, zip }
  })

/** A big entry (an archive inside the archive) of an archive whose directory was read without yauzl: yauzl streams it. */
const bigEntryBytes = (path: string, wanted: ZipEntryInfo, limits: ZipLimits): Stream.Stream<Uint8Array, FeedRefused> =>
  Stream.unwrap(Effect.gen(function*() {
    const zip = yield* openZip(path)
    const entries = zip.eachEntry()
    while (true) {
      const next = yield* Effect.tryPromise({ try: () => entries.next(), catch: unreadable })
      if (next.done === true) return Stream.fail(refused("Corrupt", "the archive changed while it was read"))
      if (next.value.relativeOffsetOfLocalHeader === wanted.relativeOffsetOfLocalHeader) {
        return entryBytes(zip, next.value, limits)
      }
    }
  })).pipe(Stream.scoped)

/** An entry's bytes, counted against its declared size as they come (yauzl also checks the size and CRC at the end). */
const entryBytes = (
  zip: yauzl.ZipFile,
  entry: yauzl.Entry,
  limits: ZipLimits
): Stream.Stream<Uint8Array, FeedRefused> =>
  Stream.unwrap(Effect.gen(function*() {
    const bad = judge(entry, limits)
    if (bad !== undefined) return Stream.fail(bad)
    const readable: Readable = yield* Effect.tryPromise({
      try: () => zip.openReadStreamPromise(entry),
      catch: unreadable
    })
    let seen = 0
    return Stream.fromAsyncIterable(readable as AsyncIterable<Uint8Array>, unreadable).pipe(
      Stream.mapEffect((chunk) => {
        seen += chunk.length
        return seen > entry.uncompressedSize || seen > limits.maxEntryBytes
          ? Effect.fail(refused("CompressionBomb", `${entry.fileName.slice(0, 200)} inflates past its declared size`))
          : Effect.succeed(chunk)
      }),
      Stream.ensuring(Effect.sync(() => readable.destroy()))
    )
  }))

/**
 * Reads the accepted entries one after another for the run's scope:
 * `entry(n)` is the n-th name `listEntries` gave, and must be asked in order
 * (the ingestion reads its files in order); the archive is walked once.
 */
export const openEntries = Effect.fnUntraced(
  function*(path: string, accept: (name: string) => boolean, limits: ZipLimits) {
    const { handle, next: nextEntry, zip } = yield* directory(path)
    const small = smallEntryReader(handle)
    let index = -1
    const entry = (n: number): Stream.Stream<Uint8Array, FeedRefused> =>
      Stream.unwrap(Effect.gen(function*() {
        if (n !== index + 1) {
          return Stream.fail(refused("Corrupt", `zip entries asked out of order (${n} after ${index})`))
        }
        while (true) {
          const next = yield* nextEntry
          if (next.done === true) return Stream.fail(refused("Corrupt", "the archive changed while it was read"))
          if (next.value.fileName.endsWith("/") || !accept(next.value.fileName)) continue
          index = n
          const bad = judge(next.value, limits)
          if (bad !== undefined) return Stream.fail(bad)
          // A record of a few KB: read from the archive's window and inflated at once (ZipSmallEntries.ts).
          if (isSmall(next.value)) return Stream.fromEffect(small(next.value))
          return zip === undefined
            ? bigEntryBytes(path, next.value, limits)
            : entryBytes(zip, next.value as yauzl.Entry, limits)
        }
      }))
    return { entry }
  }
) as (path: string, accept: (name: string) => boolean, limits: ZipLimits) => Effect.Effect<
  { readonly entry: (n: number) => Stream.Stream<Uint8Array, FeedRefused> },
  FeedRefused,
  Scope.Scope
>

/** Extracts the one entry named `name` (an archive inside the archive) to `dest`, within the caps. */
export const extractEntry = Effect.fnUntraced(function*(path: string, name: string, dest: string, limits: ZipLimits) {
  const names = yield* listEntries(path, (n) => n === name, limits)
  if (names.length === 0) return yield* refused("Corrupt", `the archive holds no ${name}`)
  const { entry } = yield* openEntries(path, (n) => n === name, limits)
  yield* download(entry(0), dest)
}, Effect.scoped)
