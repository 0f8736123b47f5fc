import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Console, Effect, Layer, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { adminSocketPath, isServing } from "../admin/AdminSocket.ts"
import { DataDir } from "../config/AppConfig.ts"
import type { SyncOutcome } from "../feeds/CatalogueSync.ts"
import { FeedCursors, type FeedState } from "../feeds/FeedCursors.ts"
import { syncSources, syncStatus } from "../feeds/FeedSync.ts"
import { printable, printTable } from "./Output.ts"

export class SourcesFailed extends Schema.TaggedError<SourcesFailed>()("SourcesFailed", { sources: Schema.Array(Schema.String) }) {
  override get message() {
    return `sync failed for ${this.sources.join(", ")} (see above; the stored data and cursors are as before the failed part)`
  }
}

export class ServerRunning extends Schema.TaggedError<ServerRunning>()("ServerRunning", {}) {
  override get message() {
    return "a vdb server runs on this data directory: `vdb sync` runs in-process only for now; stop the server, or run it with a DATABASE_URL and sync from another data directory"
  }
}

/** The in-process database and an undici client; loaded only when a sync runs here. */
const InProcess = Layer.unwrap(Effect.promise(() => import("../../layers/Main.ts")).pipe(
  Effect.map(({ Main }) => Layer.provideMerge(FeedCursors.layer, Main).pipe(Layer.merge(NodeHttpClient.layerUndici)))
))

const refuseWhileServing = Effect.gen(function*() {
  if (yield* isServing(adminSocketPath(yield* DataDir))) return yield* new ServerRunning()
})

const iso = (d: Date | undefined) => d?.toISOString() ?? "-"

const outcomeLine = (o: SyncOutcome) =>
  printable(
    `${o.source}: ${o.status}${o.status === "unchanged" ? "" : `, ${o.changed} changed, ${o.failed} failed`}` +
      `${o.error === undefined ? "" : ` — ${o.error.message}`}; next run ${o.nextRunAt.toISOString()}`
  )

/** Every member present, unset ones as null, so a script can tell "never" from a missing field. */
const stateJson = (s: FeedState) => ({
  source: s.source,
  cursor: s.cursor,
  lastSuccessAt: s.lastSuccessAt?.toISOString() ?? null,
  lastAttemptAt: s.lastAttemptAt?.toISOString() ?? null,
  lastError: s.lastError ?? null,
  lastErrorKind: s.lastErrorKind ?? null,
  failures: s.failures,
  recordsChanged: s.recordsChanged,
  recordsFailed: s.recordsFailed,
  nextRunAt: s.nextRunAt?.toISOString() ?? null,
  provenance: { url: s.lastUrl ?? null, etag: s.lastEtag ?? null, fetchedAt: s.lastFetchedAt?.toISOString() ?? null }
})

const status = (json: boolean) =>
  Effect.gen(function*() {
    const states = yield* syncStatus()
    if (json) return yield* Console.log(JSON.stringify(states.map(stateJson), null, 2))
    yield* printTable(
      ["SOURCE", "LAST SUCCESS", "LAST ATTEMPT", "CHANGED", "FAILED", "CURSOR", "NEXT RUN", "ERROR"],
      states.map((s) => [
        s.source,
        iso(s.lastSuccessAt),
        iso(s.lastAttemptAt),
        String(s.recordsChanged),
        String(s.recordsFailed),
        printable(s.cursor.etag ?? s.cursor.lastModified ?? s.cursor.watermark ?? s.cursor.lastDelta ?? "-"),
        iso(s.nextRunAt),
        printable(s.lastError ?? "-")
      ])
    )
  })

const sources = Argument.String("source").pipe(
  Argument.withDescription("Sources to fetch now (default: all live feeds), or `status`"),
  Argument.variadic()
)
const full = Flag.Boolean("full").pipe(Flag.withDescription("Ignore the stored cursors: fetch everything again"), Flag.withDefault(false))
const json = Flag.Boolean("json").pipe(Flag.withDescription("Machine-readable output on stdout"), Flag.withDefault(false))

export const syncCommand = Command.make(
  "sync",
  { sources, full, json },
  Effect.fn(function*(input) {
    yield* refuseWhileServing
    const run = Effect.gen(function*() {
      if (input.sources[0] === "status" && input.sources.length === 1) return yield* status(input.json)
      const outcomes = yield* syncSources(input.sources, { full: input.full }, (source) => Console.error(`${source}: fetching…`))
      if (input.json) yield* Console.log(JSON.stringify(outcomes, null, 2))
      else for (const o of outcomes) yield* Console.log(outcomeLine(o))
      const failed = outcomes.filter((o) => o.status === "failed").map((o) => o.source)
      if (failed.length > 0) return yield* new SourcesFailed({ sources: failed })
    })
    return yield* run.pipe(Effect.provide(InProcess))
  })
).pipe(
  Command.withDescription("Fetch upstream feeds now (conditional requests; cursors move only once data is stored); `sync status` shows each feed"),
  Command.withExamples([
    { command: "vdb sync", description: "Every live feed" },
    { command: "vdb sync cisa-kev epss --json", description: "Two feeds, machine-readable outcome" },
    { command: "vdb sync --full nuclei", description: "Fetch again ignoring the stored ETag" },
    { command: "vdb sync status", description: "Last success, last attempt, error, records changed, cursor, next run" }
  ])
)
