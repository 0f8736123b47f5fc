import type { Stream } from "effect"
import type { FileUnreadable } from "./FileBytes.ts"
import type { FormatReaders } from "./FormatReaders.ts"
import type { IngestFile } from "./IngestEvents.ts"

/** What a run ingests: the files (in order) and, under `--all`, those that belong to no source. */
export interface IngestPlan {
  readonly files: ReadonlyArray<IngestFile>
  readonly ignored: ReadonlyArray<{ readonly path: string; readonly reason: string }>
}

/** The bytes of the plan's file number `index`, uncompressed, in chunks. */
export type OpenFile = (index: number) => Stream.Stream<Uint8Array, FileUnreadable>

export interface IngestOptions {
  /** Items per transaction pair (raw, then normalised). */
  readonly batchSize?: number
  /** Batches being written at once (raw phases overlap; phase-2 transactions stay one at a time). */
  readonly inFlight?: number
  /**
   * Characters of raw text the batches of all runs on the store may hold at once (`BatchBudget.ts`):
   * set by the first run on a store (tests give a small one), shared by the later ones.
   */
  readonly batchChars?: number
  readonly formats?: FormatReaders
  /**
   * Worker threads normalising (phase 2) off the main thread; 0 normalises
   * inline. Default: `defaultWorkers()` with the real readers, 0 when a test
   * swaps them (workers always load the real ones).
   */
  readonly workers?: number
  /**
   * A run that normalises at least this many items refreshes the store's statistics when it ends,
   * and once on the way, at ten times as many (`VulnStore.refreshStatistics`). Default 1,000.
   */
  readonly analyzeAfter?: number
}
