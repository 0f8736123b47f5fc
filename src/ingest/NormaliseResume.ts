import { Cause, Effect, Layer } from "effect"
import { VulnStore } from "../vulns/VulnStore.ts"
import type { FailedItem, NormalisedItem, PendingCursor, RawItem } from "../vulns/VulnStoreShapes.ts"
import { makeNormalisePool, type WorkerItem } from "./NormalisePool.ts"
import type { IngestSource } from "./Upstream.ts"

export interface ResumeOptions {
  /** Pending raw items read, normalised and written per round. */
  readonly pageSize?: number
  /** Worker threads; one by default, so serving keeps the other cores. */
  readonly workers?: number
}

/** The original file position is not stored; a failure of a resumed item says where it came from instead. */
const positionOf = (item: RawItem) => `${item.source} ${item.identifier} (stored, normalised at start)`

const errorMessage = (error: unknown) => error instanceof Error ? error.message : "unknown error"

const toWorkerItem = (item: RawItem): WorkerItem => ({
  source: item.source as IngestSource,
  identifier: item.identifier,
  raw: item.content,
  position: positionOf(item)
})

/**
 * Phase 2 for raw items a stopped ingestion left behind: an ingestion killed
 * between its two transactions has stored (and acknowledged) raw files whose
 * records do not exist yet, and `/info` shows them `processing`. One pass over
 * the pending items in key order; each round is one `putNormalised`
 * transaction, so a pass interrupted in turn simply leaves the rest pending for
 * the next start. Returns how many items it normalised or recorded as failed.
 */
export const resumePending = Effect.fn("NormaliseResume.resumePending")(function*(options: ResumeOptions = {}) {
  const store = yield* VulnStore
  const pageSize = options.pageSize ?? 500
  const first = yield* store.pendingRaw(undefined, pageSize)
  // Nothing pending (the usual start): no worker thread is started at all.
  if (first.length === 0) return 0
  yield* Effect.logInfo("normalising stored items an interrupted ingestion left pending")
  return yield* Effect.scoped(Effect.gen(function*() {
    const pool = yield* makeNormalisePool(options.workers ?? 1)
    let items = first
    let resumed = 0
    while (items.length > 0) {
      const outcomes = yield* pool.normalise(items.map(toWorkerItem))
      const done: Array<NormalisedItem> = []
      const failed: Array<FailedItem> = []
      items.forEach((item, n) => {
        const key = { source: item.source, identifier: item.identifier, hash: item.hash }
        const outcome = outcomes[n]!
        if ("problem" in outcome) {
          failed.push({ ...key, position: outcome.problem.position, reason: outcome.problem.reason })
        } else done.push({ ...key, outputs: outcome.outputs })
      })
      yield* store.putNormalised(done, failed)
      resumed += items.length
      const last: PendingCursor = items[items.length - 1]!
      items = items.length < pageSize ? [] : yield* store.pendingRaw(last, pageSize)
    }
    return resumed
  }))
})

/**
 * At server start, normalises in the background what an interrupted ingestion
 * stored raw (see `resumePending`). It never stops the server: a failure is
 * logged, and the items stay pending for the next start or ingestion.
 */
export const NormaliseResumeLayer: Layer.Layer<never, never, VulnStore> = Layer.effectDiscard(
  resumePending().pipe(
    Effect.tap((n) =>
      n > 0 ? Effect.logInfo("normalised the pending stored items").pipe(Effect.annotateLogs("items", n)) : Effect.void
    ),
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.void
        // The message only: a stack or a failing statement's parameters could carry stored content.
        : Effect.logError("resuming pending normalisation failed; the items stay pending").pipe(
          Effect.annotateLogs("reason", errorMessage(Cause.squash(cause)))
        )
    ),
    Effect.forkScoped
  )
)
