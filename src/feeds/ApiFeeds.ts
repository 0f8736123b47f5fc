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
  /** Whether it runs at all (VulnCheck only with a token; nothing is said otherwise). */
  readonly enabled: Effect.Effect<boolean>
  readonly run: (options: FeedOptions) => Effect.Effect<SyncOutcome | undefined, never, Requirements>
}

const always = Effect.succeed(true)
const withToken = Effect.map(vulnCheckToken, Option.isSome)

export const API_FEEDS: ReadonlyArray<ApiFeed> = [
  { source: "ghsa", enabled: always, run: syncGhsa },
  { source: "euvd", enabled: always, run: syncEuvd },
  { source: "poc-in-github", enabled: always, run: syncPocInGithub },
  { source: "vulncheck-kev", enabled: withToken, run: (o) => syncVulnCheck("vulncheck-kev", o) },
  { source: "vulncheck-nvd", enabled: withToken, run: (o) => syncVulnCheck("vulncheck-nvd", o) }
]
