import { Context, Effect } from "effect"

/**
 * Where a running sync reports how far it got, for `vdb sync`'s progress
 * lines. A reference with a silent default: the schedule's runs report to
 * nobody, and the feeds' signatures stay as they are.
 */
export interface SyncProgressSink {
  /** Items read so far from the file (or API page) being stored. */
  readonly file: (source: string, items: number) => Effect.Effect<void>
  /** That file is stored: its items count towards the source's total. */
  readonly fileDone: (source: string, items: number) => Effect.Effect<void>
}

export class SyncProgress extends Context.Reference<SyncProgressSink>("vdb/feeds/SyncProgress", {
  defaultValue: () => ({ file: () => Effect.void, fileDone: () => Effect.void })
}) {}

/** A sink summing a source's files: `onItems(source, total)` after every report. */
export const summingSink = (onItems: (source: string, items: number) => Effect.Effect<void>): SyncProgressSink => {
  const done = new Map<string, number>()
  return {
    file: (source, items) => Effect.suspend(() => onItems(source, (done.get(source) ?? 0) + items)),
    fileDone: (source, items) =>
      Effect.suspend(() => {
        done.set(source, (done.get(source) ?? 0) + items)
        return onItems(source, done.get(source)!)
      })
  }
}
