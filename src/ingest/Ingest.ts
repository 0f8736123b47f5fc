import { createHash } from "node:crypto"
import { Clock, Effect, Fiber, Queue, Stream } from "effect"
import type { FailedItem, NormalisedItem, RawItem } from "../vulns/VulnStore.ts"
import { VulnStore } from "../vulns/VulnStore.ts"
import * as Formats from "./formats/index.ts"
import type { IngestError } from "./IngestError.ts"
import { type IngestEvent, IngestProblem, IngestProgress, type IngestRequest, IngestSummary, type Tally } from "./IngestEvents.ts"
import { defaultWorkers, makeNormalisePool, type NormalisePool, type WorkerResult } from "./NormalisePool.ts"
import { type Plan, planIngest, readText, type SourceFile } from "./SourceFiles.ts"
import type { ItemProblem, UpstreamItem } from "./Upstream.ts"

/** The format readers: the real ones unless a test swaps them. */
export interface FormatReaders {
  readonly readItems: typeof Formats.readItems
  readonly normalise: typeof Formats.normalise
  readonly detectSource: typeof Formats.detectSource
}

export interface IngestOptions {
  /** Items per transaction pair (raw, then normalised). */
  readonly batchSize?: number
  /** Batches being written at once (raw phases overlap; phase-2 transactions stay one at a time). */
  readonly inFlight?: number
  readonly formats?: FormatReaders
  /**
   * Worker threads normalising (phase 2) off the main thread; 0 normalises
   * inline. Default: `defaultWorkers()` with the real readers, 0 when a test
   * swaps them (workers always load the real ones).
   */
  readonly workers?: number
}

const isItemProblem = (x: UpstreamItem | ItemProblem | ReadonlyArray<unknown>): x is ItemProblem =>
  !Array.isArray(x) && !("raw" in x) && "reason" in x

const DEFAULT_BATCH = 2000
const DEFAULT_IN_FLIGHT = 3
const MAX_REASONS = 50
const MAX_CONFLICTS = 50

const contentHash = (text: string) => createHash("sha256").update(text).digest("base64url")

const message = (cause: unknown) => cause instanceof Error ? cause.message : String(cause)

const slim = (item: UpstreamItem): UpstreamItem => ({
  source: item.source,
  identifier: item.identifier,
  raw: item.raw,
  position: item.position,
  parsed: undefined
})

const normaliseInline = (formats: FormatReaders, item: UpstreamItem): WorkerResult => {
  let outputs: ReturnType<typeof Formats.normalise>
  try {
    outputs = formats.normalise(item)
  } catch (cause) {
    outputs = { position: item.position, reason: `normaliser failed: ${message(cause)}` }
  }
  return isItemProblem(outputs) ? { problem: outputs } : { outputs }
}

/**
 * Ingests files into the vulnerability store as a stream of events: a
 * `Problem` for every skipped item, a `Progress` after every batch, then one
 * `Summary`. The request is checked (sources, readable paths) before the
 * stream writes anything; a bad request fails the stream with `IngestError`.
 *
 * Each batch is two transactions: the raw items (phase 1), then what they
 * normalise to (phase 2). Unchanged items (same content hash, already
 * normalised) cost one indexed look-up and nothing else, so a re-run is
 * cheap and a run killed at any point converges when run again.
 */
export const ingest = (
  request: IngestRequest,
  options: IngestOptions = {}
): Stream.Stream<IngestEvent, IngestError, VulnStore> =>
  Stream.unwrap(Effect.gen(function*() {
    const formats = options.formats ?? Formats
    const plan = yield* planIngest(request, formats.detectSource)
    const store = yield* VulnStore
    const workers = options.workers ?? (options.formats === undefined ? defaultWorkers() : 0)
    return Stream.callback<IngestEvent>(
      (queue) =>
        Effect.scoped(Effect.gen(function*() {
          const pool = workers > 0 ? yield* makeNormalisePool(workers) : undefined
          yield* run(plan, store, formats, pool, options.batchSize ?? DEFAULT_BATCH, options.inFlight ?? DEFAULT_IN_FLIGHT, (event) => Queue.offer(queue, event))
        })).pipe(
          Effect.andThen(Queue.end(queue))
        ),
      { bufferSize: 256, strategy: "suspend" }
    )
  }))

const run = Effect.fnUntraced(function*(
  plan: Plan,
  store: VulnStore["Service"],
  formats: FormatReaders,
  pool: NormalisePool | undefined,
  batchSize: number,
  depth: number,
  emit: (event: IngestEvent) => Effect.Effect<unknown>
) {
  const started = yield* Clock.currentTimeMillis
  const tally: { -readonly [K in keyof Tally]: Tally[K] } = {
    files: 0,
    totalFiles: plan.files.length,
    items: 0,
    inserted: 0,
    updated: 0,
    unchanged: 0,
    duplicates: 0,
    conflicting: 0,
    normalised: 0,
    skipped: 0,
    elapsedMs: 0,
    perSecond: 0
  }
  const reasons: Record<string, number> = {}
  const seen = new Map<string, { readonly hash: string; readonly position: string }>()
  const conflicts: Array<{ source: string; identifier: string; kept: string; dropped: string }> = []
  let batch: Array<{ readonly item: UpstreamItem; readonly hash: string }> = []
  let current = ""

  const stamp = Effect.gen(function*() {
    tally.elapsedMs = (yield* Clock.currentTimeMillis) - started
    tally.perSecond = tally.elapsedMs > 0 ? Math.round((tally.items * 1000) / tally.elapsedMs) : 0
  })

  const skip = (position: string, reason: string) => {
    tally.skipped++
    const bucket = reason in reasons || Object.keys(reasons).length < MAX_REASONS ? reason : "other reasons"
    reasons[bucket] = (reasons[bucket] ?? 0) + 1
    return emit(new IngestProblem({ position, reason }))
  }

  // Batches overlap: while batch n's phase 2 is in the database, the raw
  // items of the next batches go in on other connections and the one after is
  // being read. Phase 2 of a batch waits for the whole previous batch, so two
  // phase-2 transactions never run at once (they may share output keys).
  const inFlight: Array<Fiber.Fiber<void>> = []
  const flush = Effect.fnUntraced(function*() {
    if (batch.length === 0) return
    const items = batch
    batch = []
    if (inFlight.length >= depth) yield* Fiber.join(inFlight.shift()!)
    inFlight.push(yield* Effect.forkChild(write(items, inFlight.at(-1))))
  })
  const drain = Effect.gen(function*() {
    while (inFlight.length > 0) yield* Fiber.join(inFlight.shift()!)
  })

  const write = Effect.fnUntraced(function*(
    chunk: ReadonlyArray<{ readonly item: UpstreamItem; readonly hash: string }>,
    prior: Fiber.Fiber<void> | undefined
  ) {
    const items = chunk.map((b) => b.item)
    const raws = chunk.map(({ hash, item }): RawItem => ({ source: item.source, identifier: item.identifier, content: item.raw, hash }))
    const results = yield* store.putRaw(raws)
    const done: Array<NormalisedItem> = []
    const failed: Array<FailedItem> = []
    const pending: Array<number> = []
    for (let n = 0; n < items.length; n++) {
      const result = results[n]!
      tally[result.outcome]++
      if (result.pending) pending.push(n)
    }
    const outcomes = pool !== undefined
      ? yield* pool.normalise(pending.map((n) => items[n]!))
      : pending.map((n) => normaliseInline(formats, items[n]!))
    for (let k = 0; k < pending.length; k++) {
      const n = pending[k]!
      const item = items[n]!
      const key = { source: item.source, identifier: item.identifier, hash: raws[n]!.hash }
      const outcome = outcomes[k]!
      if ("problem" in outcome) failed.push({ ...key, position: outcome.problem.position, reason: outcome.problem.reason })
      else done.push({ ...key, outputs: outcome.outputs, fresh: results[n]!.outcome === "inserted" })
    }
    if (prior !== undefined) yield* Fiber.join(prior)
    if (done.length > 0 || failed.length > 0) yield* store.putNormalised(done, failed)
    tally.normalised += done.length
    for (const f of failed) yield* skip(f.position, f.reason)
    yield* stamp
    yield* emit(new IngestProgress({ ...tally, file: current }))
  })

  const readFile = Effect.fnUntraced(function*(file: SourceFile) {
    let text: string
    try {
      text = readText(file)
    } catch (cause) {
      tally.items++
      return yield* skip(file.display, `unreadable file: ${message(cause)}`)
    }
    const iterator = formats.readItems(file.source, file.display, text)[Symbol.iterator]()
    while (true) {
      let next: IteratorResult<UpstreamItem | ItemProblem>
      try {
        next = iterator.next()
      } catch (cause) {
        tally.items++
        return yield* skip(file.display, `cannot read items: ${message(cause)}`)
      }
      if (next.done === true) return
      const item = next.value
      tally.items++
      if (isItemProblem(item)) {
        yield* skip(item.position, item.reason)
        continue
      }
      const key = `${item.source}\u0000${item.identifier}`
      const hash = contentHash(item.raw)
      const first = seen.get(key)
      if (first !== undefined) {
        tally.duplicates++
        if (first.hash !== hash) {
          tally.conflicting++
          if (conflicts.length < MAX_CONFLICTS) {
            conflicts.push({ source: item.source, identifier: item.identifier, kept: first.position, dropped: item.position })
          }
        }
        continue
      }
      seen.set(key, { hash, position: item.position })
      // With workers the parsed document is rebuilt there from `raw`: drop it now, not after the batch.
      batch.push({ item: pool === undefined ? item : slim(item), hash })
      if (batch.length >= batchSize) yield* flush()
    }
  })

  for (const file of plan.files) {
    tally.files++
    current = file.display
    yield* readFile(file)
  }
  yield* flush()
  yield* drain
  yield* stamp
  yield* emit(new IngestSummary({ ...tally, skippedReasons: reasons, conflicts, ignoredFiles: plan.ignored }))
})
