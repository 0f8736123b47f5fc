import { Console, Context, Effect, Schema, Stream } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { RpcClient, RpcClientError, RpcGroup } from "effect/rpc"
import type { FeedRpcs, FeedStatus, SyncFinished } from "../feeds/FeedRpcs.ts"
import { counted, printable, printTable } from "./Output.ts"

/** The feed RPCs: the running server's over its admin socket, or the same handlers in-process. */
export class FeedClient extends Context.Service<
  FeedClient,
  RpcClient.RpcClient<RpcGroup.Rpcs<typeof FeedRpcs>, RpcClientError.RpcClientError>
>()("vdb/cli/FeedClient") {}

export class SourcesFailed
  extends Schema.TaggedError<SourcesFailed>()("SourcesFailed", { sources: Schema.Array(Schema.String) })
{
  override get message() {
    return `sync failed for ${
      this.sources.join(", ")
    } (see above; the stored data and cursors are as before the failed part)`
  }
}

export class SyncInterrupted extends Schema.TaggedError<SyncInterrupted>()("SyncInterrupted", {}) {
  override get message() {
    return "the server went away during the sync: what it stored is kept, and the cursors moved only past stored data; run the same command again to resume"
  }
}

const iso = (d: string | null) => d ?? "-"

const outcomeLine = (o: SyncFinished) =>
  printable(
    o.status === "busy"
      ? `${o.source}: not run, a run of it is in progress (the schedule's or another sync's)`
      : o.status === "off"
      ? `${o.source}: off (${o.reason ?? "not configured"})`
      : `${o.source}: ${o.status}${o.status === "unchanged" ? "" : `, ${o.changed} changed, ${o.failed} failed`}` +
        `${o.error === undefined ? "" : ` — ${o.error.message}`}${
          o.nextRunAt === undefined ? "" : `; next run ${o.nextRunAt}`
        }`
  )

const BAR = 24

/**
 * One line per source, redrawn in place on a terminal: waiting, a bar moving
 * while records arrive (the feeds do not say in advance how many there are),
 * then how it ended. Off a terminal the CLI writes a plain line per start.
 */
const progressView = (sources: ReadonlyArray<string>) => {
  const width = () => Math.max(...[...lines.keys()].map((s) => s.length))
  const lines = new Map(sources.map((s) => [s, "waiting"]))
  let drawn = 0
  let tick = 0
  const bar = (items: number) => {
    const at = tick++ % BAR
    return `[${"=".repeat(at)}>${" ".repeat(BAR - at - 1)}] ${counted(items, "record")}`
  }
  const draw = () => {
    const out = [...lines].map(([s, l]) => `\x1b[K${s.padEnd(width())}  ${l}`).join("\n")
    // Back to the first line drawn last time (a source not named beforehand adds a line).
    process.stderr.write(`${drawn > 1 ? `\x1b[${drawn - 1}A` : ""}\r${out}\r`)
    drawn = lines.size
  }
  return {
    set: (source: string, line: string) =>
      Effect.sync(() => {
        lines.set(source, line)
        draw()
      }),
    items: (source: string, items: number) =>
      Effect.sync(() => {
        lines.set(source, bar(items))
        draw()
      }),
    end: Effect.sync(() => void (drawn > 0 && process.stderr.write("\n")))
  }
}

const statusTable = (rows: ReadonlyArray<FeedStatus>) =>
  printTable(
    ["SOURCE", "LAST SUCCESS", "LAST ATTEMPT", "CHANGED", "FAILED", "CURSOR", "INTERVAL", "NEXT RUN", "ERROR"],
    rows.map((s) => [
      s.source,
      iso(s.lastSuccessAt),
      iso(s.lastAttemptAt),
      String(s.recordsChanged),
      String(s.recordsFailed),
      s.cursor.etag ?? s.cursor.lastModified ?? s.cursor.watermark ?? s.cursor.lastDelta ?? "-",
      s.interval,
      s.off === null ? iso(s.nextRunAt) : `off (${s.off})`,
      s.lastError ?? "-"
    ])
  )

const run = (sources: ReadonlyArray<string>, full: boolean, json: boolean) =>
  Effect.gen(function*() {
    const client = yield* FeedClient
    const tty = process.stderr.isTTY === true && !json
    const finished: Array<SyncFinished> = []
    let view: ReturnType<typeof progressView> | undefined
    yield* client.SyncRun({ sources, full }).pipe(
      Stream.runForEach((event): Effect.Effect<void> => {
        switch (event._tag) {
          case "Started":
            if (!tty) return Console.error(`${event.source}: fetching…`)
            view ??= progressView(sources)
            return view.set(event.source, "fetching…")
          case "Items":
            return view === undefined ? Effect.void : view.items(event.source, event.items)
          case "Finished":
            finished.push(event)
            if (!tty) return Effect.void
            // A source named but off ends without having started.
            view ??= progressView(sources)
            return view.set(event.source, outcomeLine(event).slice(event.source.length + 2))
        }
      }),
      Effect.ensuring(Effect.suspend(() => view?.end ?? Effect.void)),
      Effect.catchTag("RpcClientError", () => Effect.fail(new SyncInterrupted()))
    )
    if (json) yield* Console.log(JSON.stringify(finished.map(({ _tag, ...rest }) => rest), null, 2))
    else if (!tty) { for (const o of finished) yield* Console.log(outcomeLine(o)) }
    const failed = finished.filter((o) => o.status === "failed").map((o) => o.source)
    if (failed.length > 0) return yield* new SourcesFailed({ sources: failed })
  })

const sources = Argument.String("source").pipe(
  Argument.withDescription("Sources to fetch now (default: all live feeds), or `status`"),
  Argument.variadic()
)
const full = Flag.Boolean("full").pipe(
  Flag.withDescription("Ignore the stored cursors: fetch everything again"),
  Flag.withDefault(false)
)
const json = Flag.Boolean("json").pipe(
  Flag.withDescription("Machine-readable output on stdout"),
  Flag.withDefault(false)
)

export const syncCommand = Command.make(
  "sync",
  { sources, full, json },
  Effect.fn(function*(input) {
    if (input.sources[0] === "status" && input.sources.length === 1) {
      const rows = yield* (yield* FeedClient).SyncStatus()
      return yield* input.json ? Console.log(JSON.stringify(rows, null, 2)) : statusTable(rows)
    }
    return yield* run(input.sources, input.full, input.json)
  })
).pipe(
  Command.withDescription(
    "Fetch upstream feeds now, through the running server when there is one (conditional requests; cursors move only once data is stored); `sync status` shows each feed"
  ),
  Command.withExamples([
    { command: "vdb sync", description: "Every live feed" },
    { command: "vdb sync cisa-kev epss --json", description: "Two feeds, machine-readable outcome" },
    { command: "vdb sync --full nuclei", description: "Fetch again ignoring the stored ETag" },
    { command: "vdb sync status", description: "Last success, last attempt, error, records changed, cursor, next run" }
  ])
)
