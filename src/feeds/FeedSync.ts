import { Effect, Schema } from "effect"
import { API_FEEDS, type FeedOptions } from "./ApiFeeds.ts"
import { CATALOGUES } from "./Catalogues.ts"
import { syncCatalogue, type SyncOutcome } from "./CatalogueSync.ts"
import { FeedCursors, type FeedState } from "./FeedCursors.ts"
import { syncMitre } from "./MitreSync.ts"
import { syncNvd } from "./NvdSync.ts"
import { syncOsv } from "./OsvSync.ts"
import { syncVulnrichment } from "./VulnrichmentSync.ts"

/** Feeds read from the publishers' archives and change lists (one module each), after NVD in a run without names. */
const ARCHIVE_FEEDS = [["mitre", syncMitre], ["osv", syncOsv], ["vulnrichment", syncVulnrichment]] as const

/** The sources `vdb sync` can fetch today, in the order a run without names takes them. */
export const FEED_SOURCES: ReadonlyArray<string> = [
  ...CATALOGUES.map((c) => c.source),
  "nist-nvd",
  ...ARCHIVE_FEEDS.map(([source]) => source),
  ...API_FEEDS.map((f) => f.source)
]

export class UnknownFeed extends Schema.TaggedError<UnknownFeed>()("UnknownFeed", {
  source: Schema.String,
  known: Schema.Array(Schema.String)
}) {
  override get message() {
    return `no live feed for "${this.source}" (feeds: ${this.known.join(", ")})`
  }
}

/** Why a source does not run (VulnCheck without its token), or undefined when it does. */
export const whyOff = (source: string): Effect.Effect<string | undefined> =>
  API_FEEDS.find((f) => f.source === source)?.off ?? Effect.succeed(undefined)

/** Runs the named sources (all when none is named) one after another; a failed source never stops the others. */
export const syncSources = Effect.fn("Feeds.sync")(function*(
  names: ReadonlyArray<string>,
  options: FeedOptions = {},
  onStart: (source: string) => Effect.Effect<void> = () => Effect.void
) {
  const unknown = names.find((n) => !FEED_SOURCES.includes(n))
  if (unknown !== undefined) return yield* new UnknownFeed({ source: unknown, known: [...FEED_SOURCES] })
  const chosen = names.length === 0 ? CATALOGUES : CATALOGUES.filter((c) => names.includes(c.source))
  const outcomes: Array<SyncOutcome> = []
  for (const feed of chosen) {
    yield* onStart(feed.source)
    outcomes.push(yield* syncCatalogue(feed, options))
  }
  if (names.length === 0 || names.includes("nist-nvd")) {
    yield* onStart("nist-nvd")
    outcomes.push(yield* syncNvd(options))
  }
  for (const [source, sync] of ARCHIVE_FEEDS) {
    if (names.length > 0 && !names.includes(source)) continue
    yield* onStart(source)
    outcomes.push(yield* sync(options))
  }
  for (const feed of API_FEEDS) {
    if ((names.length > 0 && !names.includes(feed.source)) || (yield* feed.off) !== undefined) continue
    yield* onStart(feed.source)
    const outcome = yield* feed.run(options)
    if (outcome !== undefined) outcomes.push(outcome)
  }
  return outcomes
})

const neverRun = (source: string): FeedState => ({
  source,
  cursor: {},
  lastUrl: undefined,
  lastEtag: undefined,
  lastFetchedAt: undefined,
  lastSuccessAt: undefined,
  lastAttemptAt: undefined,
  lastError: undefined,
  lastErrorKind: undefined,
  failures: 0,
  recordsChanged: 0,
  recordsFailed: 0,
  nextRunAt: undefined
})

/** Every feed's row, a never-run feed included (with nothing set), and why a feed is off if it is. */
export const syncStatus = Effect.fn("Feeds.status")(function*() {
  const rows = new Map((yield* (yield* FeedCursors).all()).map((r) => [r.source, r]))
  return yield* Effect.forEach(
    FEED_SOURCES,
    (source) => Effect.map(whyOff(source), (off) => ({ ...(rows.get(source) ?? neverRun(source)), off }))
  )
})
