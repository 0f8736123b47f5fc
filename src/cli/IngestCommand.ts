import { Console, Context, Effect, Option, Schema, Stream } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { RpcClientError, RpcGroup } from "effect/rpc"
import type { RpcClient } from "effect/rpc"
import { detectSource, INGEST_FORMATS } from "../ingest/formats/index.ts"
import { IngestInterrupted } from "../ingest/IngestError.ts"
import type { IngestProgress, IngestSummary } from "../ingest/IngestEvents.ts"
import type { IngestRpcs } from "../ingest/IngestRpcs.ts"
import { uploadRun } from "../ingest/IngestUpload.ts"
import { planIngest } from "../ingest/SourceFiles.ts"
import { counted, printable } from "./Output.ts"

/** The ingest operations of the admin RPC client (the lead's `AdminClient` once `IngestRpcs` is merged in). */
export class IngestClient extends Context.Service<
  IngestClient,
  RpcClient.RpcClient<RpcGroup.Rpcs<typeof IngestRpcs>, RpcClientError.RpcClientError>
>()("vdb/ingest/IngestClient") {}

export class ItemsSkipped extends Schema.TaggedError<ItemsSkipped>()("ItemsSkipped", { skipped: Schema.Int }) {
  override get message() {
    // Most skips are items that could not be read, which nothing stores; only one stored whose normalisation failed is kept for --failed.
    return `${
      counted(this.skipped, "item")
    } skipped (see the problems above; those stored but not normalised are also kept: \`vdb ingest --failed\`)`
  }
}

const MAX_PROBLEM_LINES = 200

const bar = (p: IngestProgress) => {
  const width = 24
  const done = p.totalFiles === 0 ? width : Math.round((p.files / p.totalFiles) * width)
  const file = printable(p.file.length > 40 ? `…${p.file.slice(-39)}` : p.file)
  return `[${"#".repeat(done)}${".".repeat(width - done)}] ${p.files}/${p.totalFiles} files  ` +
    `${counted(p.items, "item")}  ${p.perSecond.toLocaleString("en")}/s  errors ${p.skipped}  ${file}`
}

const summaryLines = (s: IngestSummary) => [
  `files: ${s.files}${s.ignoredFiles.length > 0 ? ` (${s.ignoredFiles.length} ignored: not a source)` : ""}`,
  `items: ${s.items}`,
  `inserted: ${s.inserted}`,
  `updated: ${s.updated}`,
  `unchanged: ${s.unchanged}`,
  `duplicates: ${s.duplicates}${
    s.conflicting > 0 ? ` (${s.conflicting} with different content; the first read was kept)` : ""
  }`,
  ...s.conflicts.map((c) => printable(`  ${c.source} ${c.identifier}: kept ${c.kept}, dropped ${c.dropped}`)),
  `normalised: ${s.normalised}`,
  `skipped: ${s.skipped}`,
  ...Object.entries(s.skippedReasons).map(([reason, n]) => `  ${n} × ${printable(reason)}`),
  `elapsed: ${(s.elapsedMs / 1000).toFixed(1)} s`,
  `records/s: ${s.perSecond}`
]

const summaryJson = (s: IngestSummary) => {
  const { _tag, ...rest } = s
  return rest
}

const args = Argument.String("args").pipe(
  Argument.withDescription("SOURCE PATH... (a file, a directory tree, NDJSON, any of them .gz; - is standard input)"),
  Argument.variadic()
)
const all = Flag.String("all").pipe(
  Flag.withDescription(
    "Ingest a folder of sources/<source>/… and corpus/<source>/… files, as test/fixtures/data is laid out"
  ),
  Flag.optional
)
const failed = Flag.Boolean("failed").pipe(
  Flag.withDescription("List items whose normalisation failed"),
  Flag.withDefault(false)
)
const format = Flag.Literals("format", INGEST_FORMATS).pipe(
  Flag.withDescription(
    "Read every PATH (and -) as this format instead of by its name: JSON or NDJSON are told apart by content"
  ),
  Flag.optional
)
const json = Flag.Boolean("json").pipe(
  Flag.withDescription("Machine-readable summary on stdout"),
  Flag.withDefault(false)
)

export const ingestCommand = Command.make(
  "ingest",
  { args, all, failed, format, json },
  Effect.fn(function*(input) {
    const client = yield* IngestClient
    if (input.failed) {
      const rows = yield* client.IngestFailed()
      if (input.json) return yield* Console.log(JSON.stringify(rows, null, 2))
      if (rows.length === 0) return yield* Console.log("no failed normalisations")
      for (const r of rows) yield* Console.log([r.source, r.identifier, r.position, r.reason].map(printable).join("\t"))
      return
    }
    const [source, ...paths] = input.args
    // Paths are opened here, against the user's working directory; the server only ever sees bytes.
    const plan = yield* planIngest({
      source,
      paths,
      all: Option.getOrUndefined(input.all),
      format: Option.getOrUndefined(input.format)
    }, detectSource)
    if (plan.files.some((f) => f.path === undefined) && process.stdin.isTTY === true) {
      yield* Console.error(
        "reading standard input (end it with Ctrl-D; pipe a file in instead: zcat x.ndjson.gz | vdb ingest SOURCE -)"
      )
    }
    const tty = process.stderr.isTTY === true
    const clearBar = tty ? Effect.sync(() => void process.stderr.write("\r\x1b[K")) : Effect.void
    let lastLine = 0
    let problems = 0
    let summary: IngestSummary | undefined
    yield* uploadRun(client, plan).pipe(
      Stream.runForEach((event): Effect.Effect<void> => {
        switch (event._tag) {
          case "Problem": {
            problems++
            if (problems > MAX_PROBLEM_LINES + 1) return Effect.void
            const line = problems > MAX_PROBLEM_LINES
              ? "… further problems not shown"
              // File names and reasons may hold anything a file does: escapes must not reach the terminal.
              : printable(`skipped ${event.position}: ${event.reason}`)
            return Effect.andThen(clearBar, Console.error(line))
          }
          case "Progress": {
            // A bar redrawn in place on a terminal; otherwise one JSON line at most every second.
            if (tty) return Effect.sync(() => void process.stderr.write(`\r\x1b[K${bar(event)}`))
            const now = Date.now()
            if (now - lastLine < 1000) return Effect.void
            lastLine = now
            const { _tag, ...rest } = event
            return Console.error(JSON.stringify({ progress: rest }))
          }
          case "Summary":
            summary = event
            return clearBar
        }
      }),
      // The socket closed under a run: the server stopped; what it stored stays, and a re-run resumes.
      Effect.catchTag("RpcClientError", () => Effect.andThen(clearBar, Effect.fail(new IngestInterrupted())))
    )
    // A run always ends with its summary; without one the server went away mid-run.
    if (summary === undefined) return yield* new IngestInterrupted()
    if (input.json) yield* Console.log(JSON.stringify(summaryJson(summary), null, 2))
    else for (const line of summaryLines(summary)) yield* Console.log(line)
    if (summary.skipped > 0) return yield* new ItemsSkipped({ skipped: summary.skipped })
  })
).pipe(
  Command.withDescription("Ingest upstream vulnerability data: SOURCE PATH..., or --all DIR; --failed lists failures"),
  Command.withExamples([
    { command: "vdb ingest mitre ./cvelistV5/cves", description: "One source from a directory tree" },
    { command: "vdb ingest osv ./pysec.ndjson.gz", description: "NDJSON, gzip-compressed" },
    {
      command: "zcat x.ndjson.gz | vdb ingest osv -",
      description: "Standard input (gzip and JSON/NDJSON are recognised; else --format)"
    },
    { command: "vdb ingest --all ../shared/data", description: "Every source of a data folder" },
    { command: "vdb ingest --failed", description: "Items whose normalisation failed" }
  ])
)
