import { accessSync, constants, readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative, sep } from "node:path"
import { gunzipSync } from "node:zlib"
import { Effect } from "effect"
import type { detectSource as DetectSource } from "./formats/index.ts"
import { IngestError, InvalidRequest, UnknownSource, UnreadablePath } from "./IngestError.ts"
import type { IngestRequest } from "./IngestEvents.ts"
import { INGEST_SOURCES, type IngestSource } from "./Upstream.ts"

/** One file to ingest: its source, where it is, and the name reported in positions. */
export interface SourceFile {
  readonly source: IngestSource
  readonly path: string
  readonly display: string
}

export interface Plan {
  readonly files: ReadonlyArray<SourceFile>
  readonly ignored: ReadonlyArray<{ readonly path: string; readonly reason: string }>
}

const fail = (reason: IngestError["reason"]) => Effect.fail(new IngestError({ reason }))

const isSource = (s: string): s is IngestSource => (INGEST_SOURCES as ReadonlyArray<string>).includes(s)

/** Every file under `root`, sorted, so a run always meets items in the same order. */
const walk = (root: string): Array<string> => {
  const stat = statSync(root)
  if (!stat.isDirectory()) return [root]
  return readdirSync(root, { withFileTypes: true })
    .filter((entry) => !entry.name.startsWith("."))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((entry) => walk(join(root, entry.name)))
}

const readable = (path: string) =>
  Effect.try({
    try: () => {
      accessSync(path, constants.R_OK)
      const files = walk(path)
      for (const file of files) accessSync(file, constants.R_OK)
      return files
    },
    catch: (cause) =>
      new IngestError({
        reason: new UnreadablePath({ path, reason: cause instanceof Error ? cause.message.replace(/^[A-Z]+: /, "") : String(cause) })
      })
  })

/**
 * Resolves a request to the files it covers, checking the source names and
 * that every path is readable: all of it before anything is written.
 */
export const planIngest = Effect.fn("Ingest.plan")(function*(request: IngestRequest, detectSource: typeof DetectSource) {
  if (request.all !== undefined) {
    if (request.source !== undefined || request.paths.length > 0) {
      return yield* fail(new InvalidRequest({ reason: "--all DIR takes no SOURCE or PATH" }))
    }
    const files: Array<SourceFile> = []
    const ignored: Array<{ path: string; reason: string }> = []
    for (const path of yield* readable(request.all)) {
      const rel = relative(request.all, path).split(sep).join("/")
      const detected = detectSource(rel)
      if (detected.kind === "source") files.push({ source: detected.source, path, display: rel })
      else ignored.push({ path: rel, reason: detected.reason })
    }
    return { files, ignored } satisfies Plan
  }
  if (request.source === undefined) return yield* fail(new InvalidRequest({ reason: "give a SOURCE and PATH..., or --all DIR" }))
  const source = request.source
  if (!isSource(source)) return yield* fail(new UnknownSource({ source, known: [...INGEST_SOURCES] }))
  if (request.paths.length === 0) return yield* fail(new InvalidRequest({ reason: `no PATH given for ${source}` }))
  const files: Array<SourceFile> = []
  for (const root of request.paths) {
    for (const path of yield* readable(root)) {
      const rel = relative(root, path)
      files.push({ source, path, display: rel === "" ? path : join(root, rel) })
    }
  }
  return { files, ignored: [] } satisfies Plan
})

/** A file's text, gunzipped when it is `.gz` (whatever the inner format: JSON, NDJSON, CSV, YAML). */
export const readText = (file: SourceFile): string => {
  const bytes = readFileSync(file.path)
  const plain = file.path.endsWith(".gz") ? gunzipSync(bytes) : bytes
  return plain.toString("utf8")
}
