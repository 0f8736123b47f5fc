import { Effect } from "effect"
import { accessSync, constants, readdirSync, realpathSync, type Stats, statSync } from "node:fs"
import { join, relative, resolve, sep } from "node:path"
import type { detectSource as DetectSource } from "./formats/index.ts"
import { IngestError, InvalidRequest, UnknownSource, UnreadablePath, UnsupportedPath } from "./IngestError.ts"
import type { IngestFile, IngestRequest } from "./IngestEvents.ts"
import { CSV_SOURCES, INGEST_SOURCES, type IngestSource } from "./Upstream.ts"

/**
 * One file to ingest, on the client's side: where its bytes come from (a
 * path, or standard input when `path` is undefined), its source and the name
 * reported in positions. Only the `IngestFile` part goes to the server.
 */
export interface SourceFile extends IngestFile {
  readonly path: string | undefined
}

export interface Plan {
  readonly files: ReadonlyArray<SourceFile>
  readonly ignored: ReadonlyArray<{ readonly path: string; readonly reason: string }>
}

/** The name standard input (`-`) gets in positions and progress. */
export const STDIN_NAME = "stdin"

const fail = (reason: IngestError["reason"]) => Effect.fail(new IngestError({ reason }))

const isSource = (s: string): s is IngestSource => (INGEST_SOURCES as ReadonlyArray<string>).includes(s)

const kindOf = (stat: Stats) =>
  stat.isFIFO()
    ? "FIFO (named pipe, or a process substitution like <(zcat f))"
    : stat.isCharacterDevice()
    ? "character device"
    : stat.isBlockDevice()
    ? "block device"
    : stat.isSocket()
    ? "socket"
    : "special file"

class Refused {
  readonly reason: IngestError["reason"]
  constructor(reason: IngestError["reason"]) {
    this.reason = reason
  }
}

const statOf = (path: string, shown: string): Stats => {
  try {
    accessSync(path, constants.R_OK)
    return statSync(path)
  } catch (cause) {
    throw new Refused(
      // Node's message names the path again ("ENOENT: no such file or directory, access '/x'"): the reason alone.
      new UnreadablePath({
        path: shown,
        reason: cause instanceof Error
          ? cause.message.replace(/^[A-Z]+: /, "").replace(/, [a-z]+ '.*'$/s, "")
          : String(cause)
      })
    )
  }
}

/**
 * Every regular file under `root`, sorted, dotfiles skipped, so a run always
 * meets items in the same order. Anything that is neither a regular file nor
 * a directory (a FIFO could block forever, a device never ends) refuses the
 * whole request before a byte is sent.
 */
const walk = (root: string, shown: string, within: ReadonlySet<string> = new Set()): Array<string> => {
  const stat = statOf(root, shown)
  if (stat.isFile()) return [root]
  if (!stat.isDirectory()) throw new Refused(new UnsupportedPath({ path: shown, kind: kindOf(stat) }))
  // A symlink back to a directory being walked is a cycle: its files are read once, where they are
  // (it used to be followed until the kernel refused, and refused the run with a 3 KB path).
  const real = realpathSync(root)
  if (within.has(real)) return []
  const inside = new Set(within).add(real)
  return readdirSync(root)
    .filter((name) => !name.startsWith("."))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .flatMap((name) => walk(join(root, name), join(shown, name), inside))
}

const files = (root: string, shown: string) =>
  Effect.try({
    try: () => walk(root, shown),
    catch: (e) =>
      e instanceof Refused
        ? new IngestError({ reason: e.reason })
        : new IngestError({ reason: new UnreadablePath({ path: shown, reason: String(e) }) })
  })

/** Why `--all DIR` found nothing: DIR is empty, or none of its files is in a source folder (the first reasons given). */
const nothingUnder = (dir: string, ignored: Plan["ignored"]) => {
  if (ignored.length === 0) {
    return `nothing to ingest under ${dir}: the directory holds no files (names starting with . are skipped)`
  }
  const shown = ignored.slice(0, 3).map((f) => `${f.path} (${f.reason})`).join("; ")
  const more = ignored.length > 3 ? `; and ${ignored.length - 3} more` : ""
  return `nothing to ingest under ${dir}: ${
    ignored.length === 1 ? "its one file is not" : `none of its ${ignored.length} files is`
  } upstream data in a source folder ` +
    `(sources/SOURCE/…, corpus/SOURCE/… or SOURCE/…; sources: ${INGEST_SOURCES.join(", ")}): ${shown}${more}`
}

/**
 * Resolves a request to the files it covers, in the CLI's own process and
 * against its working directory (`cwd`): checks the source names, that every
 * path is a readable regular file or directory (or `-`), and detects sources
 * under `--all`; all of it before anything is sent or written.
 */
export const planIngest = Effect.fn("Ingest.plan")(function*(
  request: IngestRequest,
  detectSource: typeof DetectSource,
  cwd: string = process.cwd()
) {
  const format = request.format === undefined ? {} : { format: request.format }
  if (request.all !== undefined) {
    if (request.source !== undefined || request.paths.length > 0) {
      return yield* fail(new InvalidRequest({ reason: "--all DIR takes no SOURCE or PATH" }))
    }
    const root = resolve(cwd, request.all)
    const planned: Array<SourceFile> = []
    const ignored: Array<{ path: string; reason: string }> = []
    for (const path of yield* files(root, request.all)) {
      const rel = relative(root, path).split(sep).join("/")
      const detected = detectSource(rel)
      if (detected.kind === "source") planned.push({ source: detected.source, path, display: rel, ...format })
      else ignored.push({ path: rel, reason: detected.reason })
    }
    // A run over nothing is a mistyped or wrong directory far more often than an intended no-op.
    if (planned.length === 0) return yield* fail(new InvalidRequest({ reason: nothingUnder(request.all, ignored) }))
    return { files: planned, ignored } satisfies Plan
  }
  if (request.source === undefined) {
    return yield* fail(new InvalidRequest({ reason: "give a SOURCE and PATH..., or --all DIR" }))
  }
  const source = request.source
  if (!isSource(source)) return yield* fail(new UnknownSource({ source, known: [...INGEST_SOURCES] }))
  if (request.format === "csv" && !CSV_SOURCES.includes(source)) {
    return yield* fail(
      new InvalidRequest({
        reason: `--format csv: ${source} has no CSV form (CSV is read for ${CSV_SOURCES.join(", ")})`
      })
    )
  }
  if (request.paths.length === 0) {
    return yield* fail(new InvalidRequest({ reason: `no PATH given for ${source} (- reads standard input)` }))
  }
  if (request.paths.filter((p) => p === "-").length > 1) {
    return yield* fail(new InvalidRequest({ reason: "standard input (-) can be given once" }))
  }
  const planned: Array<SourceFile> = []
  for (const given of request.paths) {
    if (given === "-") {
      planned.push({ source, path: undefined, display: STDIN_NAME, ...format })
      continue
    }
    const root = resolve(cwd, given)
    const found = yield* files(root, given)
    if (found.length === 0) {
      return yield* fail(
        new InvalidRequest({
          reason: `nothing to ingest in ${given}: the directory holds no files (names starting with . are skipped)`
        })
      )
    }
    for (const path of found) {
      const rel = relative(root, path)
      planned.push({ source, path, display: rel === "" ? given : join(given, rel), ...format })
    }
  }
  return { files: planned, ignored: [] } satisfies Plan
})
