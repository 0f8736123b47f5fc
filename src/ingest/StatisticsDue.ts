/**
 * When an ingestion refreshes the store's planner statistics, counted across
 * every run of the process on one store. A run that normalises at least
 * `analyzeAfter` items refreshed them when it ended, whatever had just been
 * analysed: a sync stores NVD page by page and its sources at the same time,
 * so a first sync of 300,000 NVD records ran 150 `ANALYZE`s of seven tables,
 * each sampling 30,000 rows of tables that had barely grown since the last.
 * Now a refresh is due only once the items normalised since the last one are
 * at least as many as before it (and at least the run's threshold): the
 * statistics follow the tables' growth by doublings, a few refreshes for a
 * large first load, and a small run on a large store leaves them as they are
 * (PostgreSQL's autovacuum analyses a table once a tenth of it changed).
 */
interface Counts {
  /** Items normalised by this process's runs on the store. */
  normalised: number
  /** `normalised` at the last refresh, if any. */
  analysedAt: number | undefined
}

const byStore = new WeakMap<object, Counts>()

export interface StatisticsDue {
  /** Counts a batch's normalised items. */
  readonly add: (n: number) => void
  /** Whether a refresh is due now for a run whose own threshold is `threshold` items. */
  readonly due: (threshold: number) => boolean
  /** A refresh was done. */
  readonly analysed: () => void
}

export const statisticsDue = (store: object): StatisticsDue => {
  let counts = byStore.get(store)
  if (counts === undefined) byStore.set(store, counts = { normalised: 0, analysedAt: undefined })
  const c = counts
  return {
    add: (n) => void (c.normalised += n),
    due: (threshold) => c.normalised - (c.analysedAt ?? 0) >= Math.max(threshold, c.analysedAt ?? 0),
    analysed: () => void (c.analysedAt = c.normalised)
  }
}
