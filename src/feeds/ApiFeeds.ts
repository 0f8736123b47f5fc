import { Effect, Option } from "effect"
import type { HttpClient } from "effect/http"
import type { VulnStore } from "../vulns/VulnStore.ts"
import type { SyncOutcome } from "./CatalogueSync.ts"
import { type EuvdOptions, syncEuvd } from "./EuvdSync.ts"
import type { FeedCursors } from "./FeedCursors.ts"
import { type GhsaOptions, syncGhsa } from "./GhsaSync.ts"
import type { NvdOptions } from "./NvdSync.ts"
import { syncPocInGithub } from "./PocInGithubSync.ts"
import { syncVulnCheck, type VulnCheckOptions, vulnCheckToken } from "./VulnCheckSync.ts"

/** What `vdb sync` passes every feed; each reads the options it knows. */
export type FeedOptions = NvdOptions & GhsaOptions & EuvdOptions & VulnCheckOptions

type Requirements = FeedCursors | VulnStore | HttpClient.HttpClient

/** A feed spoken through its publisher's API, page by page, beside the catalogues and NVD. */
export interface ApiFeed {
  readonly source: string
  /** Why it does not run, when it does not (VulnCheck without a token): `sync status` says so, a run says nothing. */
  readonly off: Effect.Effect<string | undefined>
  readonly run: (options: FeedOptions) => Effect.Effect<SyncOutcome | undefined, never, Requirements>
}

const on = Effect.succeed(undefined)
const offWithoutToken = Effect.map(vulnCheckToken, (t) => Option.isSome(t) ? undefined : "needs VDB_VULNCHECK_TOKEN")

export const API_FEEDS: ReadonlyArray<ApiFeed> = [
  { source: "ghsa", off: on, run: syncGhsa },
  { source: "euvd", off: on, run: syncEuvd },
  { source: "poc-in-github", off: on, run: syncPocInGithub },
  { source: "vulncheck-kev", off: offWithoutToken, run: (o) => syncVulnCheck("vulncheck-kev", o) },
  { source: "vulncheck-nvd", off: offWithoutToken, run: (o) => syncVulnCheck("vulncheck-nvd", o) }
]
