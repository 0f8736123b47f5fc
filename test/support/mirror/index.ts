import type { IncomingMessage, ServerResponse } from "node:http"
import type { ApiContext, ApiFault, ApiRequest } from "./api.ts"
import { euvdItems, euvdRoute } from "./euvd.ts"
import { ghsaAdvisories, ghsaRoute, type GhsaState } from "./ghsa.ts"
import { commit, pocFiles, pocRoute, type PocState } from "./pocInGithub.ts"
import { vulnCheckKev, vulnCheckNvd, vulnCheckRoute, type VulnCheckState } from "./vulncheck.ts"

export type { ApiFault, ApiRequest } from "./api.ts"

/** The API publishers the mirror stands in for (GitHub, ENISA, nomi-sec via GitHub, VulnCheck): their data, requests and faults. */
export interface ApiMirror {
  readonly log: Array<ApiRequest>
  /** Answer the next `times` requests to `path` with `status` and `headers`. */
  readonly fault: (path: string, fault: ApiFault) => void
  readonly ghsa: GhsaState
  readonly euvd: Array<Record<string, unknown>>
  readonly poc: PocState & { readonly commit: () => void }
  readonly vulncheck: VulnCheckState
  /** Answers the request if it is one of the APIs'. */
  readonly answer: (req: IncomingMessage, res: ServerResponse, url: URL) => boolean
}

export const apiMirror = (url: (path: string) => string): ApiMirror => {
  const ctx: ApiContext = { url, log: [], faults: new Map() }
  const ghsa: GhsaState = { advisories: ghsaAdvisories(), remaining: 60 }
  const euvd = euvdItems()
  const poc: PocState = { files: pocFiles(), sha: "", cutArchive: false }
  commit(poc)
  const vulncheck: VulnCheckState = { kev: vulnCheckKev(), nvd: vulnCheckNvd() }
  const routes = [ghsaRoute(ghsa), euvdRoute(euvd), pocRoute(poc), vulnCheckRoute(vulncheck)]
  return {
    log: ctx.log,
    fault: (path, fault) => void ctx.faults.set(path, fault),
    ghsa,
    euvd,
    poc: Object.assign(poc, { commit: () => commit(poc) }),
    vulncheck,
    answer: (req, res, u) => routes.some((route) => route(ctx, req, res, u))
  }
}

/** `VDB_FEED_<SOURCE>_URL` for the API feeds, pointed at the mirror. */
export const apiMirrorConfig = (url: (path: string) => string): Record<string, string> => ({
  VDB_FEED_GHSA_URL: url("/ghsa/advisories"),
  VDB_FEED_EUVD_URL: url("/euvd/api/search"),
  VDB_FEED_POC_IN_GITHUB_URL: url("/poc-in-github"),
  VDB_FEED_VULNCHECK_KEV_URL: url("/vulncheck/v3/index/vulncheck-kev"),
  VDB_FEED_VULNCHECK_NVD_URL: url("/vulncheck/v3/index/vulncheck-nvd2")
})
