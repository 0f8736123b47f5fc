import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { ConfigProvider, Effect, Layer } from "effect"
import type { FeedOptions } from "../../src/feeds/ApiFeeds.ts"
import { FeedCursors } from "../../src/feeds/FeedCursors.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { PostgresTest } from "../support/database.ts"
import { type FeedMirror, feedMirror, mirrorConfig } from "../support/feedMirror.ts"

/** The API feeds' tests: a database (a throwaway PostgreSQL one by default), the store, the cursors and a real HTTP client. */
export const apiFeedsApp = (database: typeof PostgresTest = PostgresTest) =>
  Layer.mergeAll(VulnStore.layer, FeedCursors.layer).pipe(
    Layer.provideMerge(database),
    Layer.merge(NodeHttpClient.layerUndici)
  )

/** A minute a run (a Retry-After of an hour ends it), short waits, no request gaps, inline normalisation, small pages (so paging is exercised on a few records). */
export const FAST: FeedOptions = {
  timeoutMs: 60_000,
  attempts: 2,
  backoffBaseMs: 10,
  requestGapMs: 0,
  pageSize: 2,
  ingest: { workers: 0 }
}

/** Runs `body` with every feed pointed at a fresh mirror, plus `extra` configuration. */
export const onMirror = <A, E, R>(
  body: (mirror: FeedMirror) => Effect.Effect<A, E, R>,
  extra: Record<string, string> = {}
) =>
  Effect.scoped(Effect.gen(function*() {
    const mirror = yield* feedMirror
    return yield* body(mirror).pipe(
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ ...mirrorConfig(mirror), ...extra })))
    )
  }))
