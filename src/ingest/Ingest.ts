import { Clock, Effect, Fiber, Queue, Stream } from "effect"
import { countIngested } from "../metrics/DataMetrics.ts"
import { VulnStore } from "../vulns/VulnStore.ts"
import type { FailedItem, NormalisedItem, RawItem } from "../vulns/VulnStoreShapes.ts"
import { batchBudget, batchTurns } from "./BatchBudget.ts"
import { fileBytes } from "./FileBytes.ts"
import { type FormatReaders, isItemProblem, message, normaliseInline, slim, wholeTextReader } from "./FormatReaders.ts"
import * as Formats from "./formats/index.ts"
import type { IngestError } from "./IngestError.ts"
import {
  type IngestEvent,
  type IngestFile,
  IngestProblem,
  IngestProgress,
  type IngestRequest,
  IngestSummary,
  type Tally
} from "./IngestEvents.ts"
import type { IngestOptions, IngestPlan, OpenFile } from "./IngestOptions.ts"
import { defaultWorkers, type NormalisePool, sharedNormalisePool } from "./NormalisePool.ts"
import { contentHash, makeSeenItems } from "./SeenItems.ts"
import { planIngest } from "./SourceFiles.ts"
import { statisticsDue } from "./StatisticsDue.ts"
import type { ItemProblem, UpstreamItem } from "./Upstream.ts"

const DEFAULT_BATCH = 2000
const DEFAULT_IN_FLIGHT = 3
const DEFAULT_ANALYZE_AFTER = 1000
/** A batch is also written once its items' raw text passes this, so big records never pile up 2,000 deep. */
const MAX_BATCH_BYTES = 32 * 1024 * 1024
/**
 * Problems sent as events per run; past it they are only counted (the summary
 * has them by reason). Random bytes read as NDJSON give one per line: millions.
 */
const MAX_PROBLEM_EVENTS = 1000
/** Reads handled between two yields to the other fibers (HTTP requests among them). */
const READS_PER_STEP = 32
/** Milliseconds of reading between two yields, whatever the number of reads. */
const STEP_MS = 1
/** While a file gives no batch to write, progress still goes out this often. */
const PROGRESS_EVERY_MS = 1000
const MAX_REASONS = 50

/**
 * Ingests files read in this process (tests, benchmarks, the CLI without a
 * server): the request is planned here (sources, readable regular files)
 * before the stream writes anything; a bad request fails the stream with
 * `IngestError`. The CLI with a server running sends the same bytes over the
 * admin socket to `ingestFiles` instead (`IngestRpcs`).
 */
export const ingest = (
  request: IngestRequest,
  options: IngestOptions = {}
): Stream.Stream<IngestEvent, IngestError, VulnStore> =>
  Stream.unwrap(Effect.map(
    planIngest(request, (options.formats ?? Formats).detectSource),
    (plan) => ingestFiles(plan, (index) => fileBytes(plan.files[index]!), options)
  ))

/**
 * Ingests files into the vulnerability store as a stream of events: a
 * `Problem` for every skipped item (the first thousand; the rest are
 * counted), a `Progress` after every batch, then one `Summary`. Each file's
 * bytes come from `open`, chunk by chunk, and are parsed as they arrive
 * (`formats/reader.ts`), so nothing holds a whole file.
 *
 * Each batch is two transactions: the raw items (phase 1), then what they
 * normalise to (phase 2). Unchanged items (same content hash, already
 * normalised) cost one indexed look-up and nothing else, so a re-run is
 * cheap and a run killed at any point converges when run again.
 */
export const ingestFiles = (
  plan: IngestPlan,
  open: OpenFile,
  options: IngestOptions = {}
): Stream.Stream<IngestEvent, never, VulnStore> =>
  Stream.unwrap(Effect.gen(function*() {
    const formats = options.formats ?? Formats
    const store = yield* VulnStore
    const workers = options.workers ?? (options.formats === undefined ? defaultWorkers() : 0)
    return Stream.callback<IngestEvent>(
      (queue) =>
        Effect.scoped(Effect.gen(function*() {
          // One pool per process, shared by the runs going on at once (a sync's sources).
          const pool = workers > 0 ? yield* sharedNormalisePool(workers) : undefined
          yield* run(plan, open, store, formats, pool, {
            batchSize: options.batchSize ?? DEFAULT_BATCH,
            depth: options.inFlight ?? DEFAULT_IN_FLIGHT,
            batchChars: options.batchChars,
            analyzeAfter: options.analyzeAfter ?? DEFAULT_ANALYZE_AFTER
          }, (event) => Queue.offer(queue, event))
        })).pipe(
          Effect.andThen(Queue.end(queue))
        ),
      { bufferSize: 256, strategy: "suspend" }
    )
  }))

// Spans (exported with tracing on): one per run, one per batch, with the phases below it
// (VulnStore.putRaw, phase 1; VulnStore.putNormalised, phase 2; the SQL of each).
const run = Effect.fn("Ingest.run")(function*(
  plan: IngestPlan,
  open: OpenFile,
  store: VulnStore["Service"],
  formats: FormatReaders,
  pool: NormalisePool | undefined,
  { analyzeAfter, batchChars, batchSize, depth }: {
    readonly batchSize: number
    readonly depth: number
    readonly batchChars: number | undefined
    readonly analyzeAfter: number
  },
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
  const seen = makeSeenItems()
  let batch: Array<{ readonly item: UpstreamItem; readonly hash: string }> = []
  let batchBytes = 0
  let current = ""
  let problemEvents = 0
  let progressAt = started
  const openReader = formats.openReader ?? wholeTextReader(formats.readItems)
  let stepStarted = performance.now()

  const stamp = Effect.gen(function*() {
    tally.elapsedMs = (yield* Clock.currentTimeMillis) - started
    tally.perSecond = tally.elapsedMs > 0 ? Math.round((tally.items * 1000) / tally.elapsedMs) : 0
  })

  let reasonKeys = 0
  const skip = (position: string, reason: string) => {
    tally.skipped++
    const known = Object.hasOwn(reasons, reason)
    const bucket = known || reasonKeys < MAX_REASONS ? reason : "other reasons"
    if (!known && bucket === reason) reasonKeys++
    reasons[bucket] = (reasons[bucket] ?? 0) + 1
    return problemEvents++ < MAX_PROBLEM_EVENTS ? emit(new IngestProblem({ position, reason })) : Effect.void
  }

  const progress = Effect.gen(function*() {
    yield* stamp
    progressAt = started + tally.elapsedMs
    yield* emit(new IngestProgress({ ...tally, file: current }))
  })

  // Batches overlap: while batch n's phase 2 is in the database, the raw
  // items of the next batches go in on other connections and the one after is
  // being read. Phase 2 of a batch waits for the whole previous batch, so two
  // phase-2 transactions never run at once (they may share output keys).
  const inFlight: Array<Fiber.Fiber<void>> = []
  let analysedOnTheWay = false
  // Statistics are an optimisation: a failure to refresh them never fails a run whose data is written.
  const statistics = statisticsDue(store)
  const turns = batchTurns(store)
  const budget = batchBudget(store, batchChars)
  // Whatever this run's batches still hold goes back when it ends, interrupted or not.
  yield* Effect.addFinalizer(() => budget.releaseAll)
  const refreshStatistics = Effect.andThen(
    Effect.sync(statistics.analysed),
    store.refreshStatistics().pipe(
      Effect.catchDefect((defect) => Effect.logWarning("ingest: the store's statistics were not refreshed", defect))
    )
  )
  const flush = Effect.fnUntraced(function*() {
    if (batch.length === 0) return
    const items = batch
    const chars = batchBytes
    batch = []
    batchBytes = 0
    if (inFlight.length >= depth) yield* Fiber.join(inFlight.shift()!)
    // The process's budget for batches in flight: reading waits here while the other runs' batches hold it.
    const release = yield* budget.take(chars)
    inFlight.push(yield* Effect.forkChild(Effect.ensuring(write(items, inFlight.at(-1)), release)))
  })
  const drain = Effect.gen(function*() {
    while (inFlight.length > 0) yield* Fiber.join(inFlight.shift()!)
  })

  const write = Effect.fn("Ingest.batch")(function*(
    chunk: ReadonlyArray<{ readonly item: UpstreamItem; readonly hash: string }>,
    prior: Fiber.Fiber<void> | undefined
  ) {
    const items = chunk.map((b) => b.item)
    const raws = chunk.map(({ hash, item }): RawItem => ({
      source: item.source,
      identifier: item.identifier,
      content: item.raw,
      hash
    }))
    // A turn among every run's batches on this store for the raw phase and normalising; released
    // before waiting for the previous batch, so a turn never waits on a batch without one.
    const normalised = yield* turns.withPermits(1)(phaseOne(items, raws))
    yield* phaseTwo(normalised, prior)
  })

  const phaseOne = Effect.fnUntraced(function*(
    items: ReadonlyArray<UpstreamItem>,
    raws: ReadonlyArray<RawItem>
  ) {
    const results = yield* store.putRaw(raws)
    const done: Array<NormalisedItem> = []
    const failed: Array<FailedItem> = []
    const pending: Array<number> = []
    for (let n = 0; n < items.length; n++) {
      const result = results[n]!
      tally[result.outcome]++
      if (result.pending) pending.push(n)
    }
    yield* countIngested(results.map((result, n) => ({ source: items[n]!.source, outcome: result.outcome })))
    const outcomes = pool !== undefined
      ? yield* pool.normalise(pending.map((n) => items[n]!))
      : pending.map((n) => normaliseInline(formats, items[n]!))
    for (let k = 0; k < pending.length; k++) {
      const n = pending[k]!
      const item = items[n]!
      const key = { source: item.source, identifier: item.identifier, hash: raws[n]!.hash }
      const outcome = outcomes[k]!
      if ("problem" in outcome) {
        failed.push({ ...key, position: outcome.problem.position, reason: outcome.problem.reason })
      } else done.push({ ...key, outputs: outcome.outputs, fresh: results[n]!.outcome === "inserted" })
    }
    return { done, failed }
  })

  const phaseTwo = Effect.fnUntraced(function*(
    { done, failed }: { readonly done: ReadonlyArray<NormalisedItem>; readonly failed: ReadonlyArray<FailedItem> },
    prior: Fiber.Fiber<void> | undefined
  ) {
    if (prior !== undefined) yield* Fiber.join(prior)
    // Counted as stored: an item another ingestion stored over meanwhile is that one's to normalise.
    if (done.length > 0 || failed.length > 0) {
      const stored = yield* store.putNormalised(done, failed)
      tally.normalised += stored
      statistics.add(stored)
    }
    // Statistics once on the way, so the API's lookups during a large first ingest are not
    // planned for empty tables (then again when the run ends).
    if (!analysedOnTheWay && tally.normalised >= analyzeAfter * 10 && statistics.due(analyzeAfter * 10)) {
      analysedOnTheWay = true
      yield* refreshStatistics
    }
    yield* countIngested(failed.map(({ source }) => ({ source, outcome: "failed" as const })))
    for (const f of failed) yield* skip(f.position, f.reason)
    yield* progress
  })

  const consume = Effect.fnUntraced(function*(file: IngestFile, reads: Iterable<UpstreamItem | ItemProblem>) {
    const iterator = reads[Symbol.iterator]()
    let steps = 0
    while (true) {
      // Bounded steps: a chunk of tiny records (or of garbage lines) is thousands of reads, and a
      // request waiting for the event loop waits for at most one step.
      if (++steps % READS_PER_STEP === 0 && performance.now() - stepStarted >= STEP_MS) {
        yield* Effect.yieldNow
        stepStarted = performance.now()
      }
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
      const hash = contentHash(item.raw)
      const seenBefore = seen.see(item, hash)
      if (seenBefore !== "new") {
        tally.duplicates++
        if (seenBefore === "conflicting") tally.conflicting++
        continue
      }
      // With workers the parsed document is rebuilt there from `raw`: drop it now, not after the batch.
      batch.push({ item: pool === undefined ? item : slim(item), hash })
      batchBytes += item.raw.length
      if (batch.length >= batchSize || batchBytes >= MAX_BATCH_BYTES) yield* flush()
    }
  })

  // Chunk by chunk: parse what arrived, hand full batches to the writers, then
  // yield, so the API and gateway answer between chunks whatever the input.
  const readFile = Effect.fnUntraced(function*(file: IngestFile, index: number) {
    const reader = openReader(file.source, file.display, file.format)
    const read = yield* Stream.runForEach(open(index), (bytes) =>
      Effect.gen(function*() {
        yield* consume(file, reader.push(bytes))
        if ((yield* Clock.currentTimeMillis) - progressAt >= PROGRESS_EVERY_MS) yield* progress
        yield* Effect.yieldNow
        stepStarted = performance.now()
      })).pipe(Effect.exit)
    if (read._tag === "Failure") {
      const reason = read.cause.reasons[0]
      tally.items++
      return yield* skip(
        file.display,
        `unreadable file: ${reason !== undefined && "error" in reason ? reason.error.message : "interrupted"}`
      )
    }
    yield* consume(file, reader.end())
  })

  // By index, the length read each time: a paged feed's plan grows while it is read (the page being
  // read says whether there is a next one: src/feeds/NvdSync.ts).
  for (let index = 0; index < plan.files.length; index++) {
    const file = plan.files[index]!
    tally.files++
    current = file.display
    yield* readFile(file, index)
  }
  yield* flush()
  yield* drain
  // Across the process's runs (StatisticsDue.ts): not again for a run that adds little to what was analysed.
  if (tally.normalised >= analyzeAfter && statistics.due(analyzeAfter)) yield* refreshStatistics
  yield* stamp
  yield* emit(
    new IngestSummary({ ...tally, skippedReasons: reasons, conflicts: seen.conflicts, ignoredFiles: plan.ignored })
  )
})
