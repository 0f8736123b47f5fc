import { Effect } from "effect"
import { join } from "node:path"
import type { IngestOptions } from "../ingest/IngestOptions.ts"
import type { IngestSource } from "../ingest/Upstream.ts"
import { type BodyLimits, guardBody } from "./BodyGuard.ts"
import { refused } from "./FeedError.ts"
import { politeFetch } from "./PoliteFetch.ts"
import { storeFiles } from "./StoreFiles.ts"
import { download, extractEntry, listEntries, openEntries, tempFolder, type ZipLimits } from "./ZipArchive.ts"

/** What GitHub, codeload and Google Cloud Storage serve archives as. */
export const ZIP_TYPES = [
  "application/zip",
  "application/x-zip-compressed",
  "application/octet-stream",
  "binary/octet-stream"
]

/**
 * The publishers' archives: the CVE List baseline is about 600 MB holding a
 * 500 MB `cves.zip` of about 2.5 GB of JSON; OSV's biggest ecosystem
 * archives are a few hundred MB. A record inflates at most 100 times.
 */
export const ZIP_LIMITS: BodyLimits & ZipLimits = {
  maxBytes: 2 * 1024 * 1024 * 1024,
  maxInflatedBytes: 16 * 1024 * 1024 * 1024,
  maxEntryBytes: 1024 * 1024 * 1024,
  maxRatio: 100
}

export interface ZipRun {
  readonly source: IngestSource
  readonly url: string
  /** The entries that are records (by name). */
  readonly accept: (name: string) => boolean
  /** An archive inside the archive holding the records (the CVE List baseline's `cves.zip`). */
  readonly inner?: string | undefined
  readonly deadline: number
  readonly attempts?: number | undefined
  readonly backoffBaseMs?: number | undefined
  readonly limits?: (BodyLimits & ZipLimits) | undefined
  readonly ingest?: IngestOptions | undefined
}

/**
 * Downloads one archive to a temporary file (capped, its length checked),
 * then stores its record entries one by one through the ingestion: the
 * archive is never held in memory, its central directory is judged (sizes,
 * ratios) before any entry is inflated, and the temporary files are removed
 * when this ends, however it ends.
 */
export const ingestZip = Effect.fnUntraced(function*(run: ZipRun) {
  const limits = run.limits ?? ZIP_LIMITS
  const dir = yield* tempFolder
  const fetched = yield* politeFetch({
    url: run.url,
    contentTypes: ZIP_TYPES,
    deadline: run.deadline,
    attempts: run.attempts,
    backoffBaseMs: run.backoffBaseMs
  })
  if (fetched._tag === "NotModified") {
    return yield* refused("HttpStatus", `${fetched.url} answered 304 to an unconditional request`)
  }
  let path = join(dir, "archive.zip")
  yield* download(guardBody(fetched.body, limits, fetched.contentLength), path)
  if (run.inner !== undefined) {
    const inner = join(dir, "inner.zip")
    yield* extractEntry(path, run.inner, inner, limits)
    path = inner
  }
  const names = yield* listEntries(path, run.accept, limits)
  const { entry } = yield* openEntries(path, run.accept, limits)
  const stored = yield* storeFiles(run.source, names, entry, { ingest: run.ingest })
  if (stored.refusal !== undefined) return yield* stored.refusal
  return { changed: stored.changed, failed: stored.failed, url: fetched.url, etag: fetched.etag, records: names.length }
}, Effect.scoped)
