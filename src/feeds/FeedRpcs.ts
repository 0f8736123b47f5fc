import { Schema } from "effect"
import { Rpc, RpcGroup } from "effect/rpc"
import { UnknownFeed } from "./FeedSync.ts"

export class SyncStarted extends Schema.TaggedClass<SyncStarted>()("Started", { source: Schema.String }) {}

/** Records read so far by a source's run (every file or page of it). */
export class SyncItems extends Schema.TaggedClass<SyncItems>()("Items", { source: Schema.String, items: Schema.Int }) {}

/**
 * A source's run ended; `busy`: not started, a run of it was going on (the schedule's, or another `vdb sync`);
 * `off`: named, but it does not run here (`reason`: VulnCheck without its token).
 */
export class SyncFinished extends Schema.TaggedClass<SyncFinished>()("Finished", {
  source: Schema.String,
  status: Schema.Literals(["updated", "unchanged", "failed", "busy", "off"]),
  reason: Schema.optional(Schema.String),
  changed: Schema.Int,
  failed: Schema.Int,
  error: Schema.optional(Schema.Struct({ kind: Schema.String, message: Schema.String })),
  nextRunAt: Schema.optional(Schema.String)
}) {}

export const SyncEvent = Schema.Union([SyncStarted, SyncItems, SyncFinished])
export type SyncEvent = typeof SyncEvent.Type

const Instant = Schema.NullOr(Schema.String)

/** `vdb sync status`'s row: every member present, unset ones null, so a script can tell "never" from missing. */
export const FeedStatus = Schema.Struct({
  source: Schema.String,
  cursor: Schema.Record(Schema.String, Schema.String),
  lastSuccessAt: Instant,
  lastAttemptAt: Instant,
  lastError: Schema.NullOr(Schema.String),
  lastErrorKind: Schema.NullOr(Schema.String),
  failures: Schema.Int,
  recordsChanged: Schema.Int,
  recordsFailed: Schema.Int,
  /** The schedule's interval for this source (`VDB_SYNC_INTERVAL_<SOURCE>` or its default). */
  interval: Schema.String,
  /** The next tick of that interval; in a failure streak, the first tick after the backoff or Retry-After; null when off. */
  nextRunAt: Instant,
  /** Why the source does not run (`needs VDB_VULNCHECK_TOKEN`), or null when it does. */
  off: Schema.NullOr(Schema.String),
  provenance: Schema.Struct({
    url: Schema.NullOr(Schema.String),
    etag: Schema.NullOr(Schema.String),
    fetchedAt: Instant
  })
})
export type FeedStatus = typeof FeedStatus.Type

/**
 * Feed sync on the admin socket: a running server does the work (its `/info`
 * cache sees the change at once, and an embedded database stays with one
 * process); without a server the CLI serves the same handlers in-process.
 */
export class FeedRpcs extends RpcGroup.make(
  Rpc.make("SyncRun", {
    payload: { sources: Schema.Array(Schema.String), full: Schema.Boolean },
    success: SyncEvent,
    error: UnknownFeed,
    stream: true
  }),
  Rpc.make("SyncStatus", { success: Schema.Array(FeedStatus) })
) {}
