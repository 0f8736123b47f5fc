import type { Route } from "./api.ts"
import { answerFault, cursorOf, jsonFiles, note, offsetOf, sendJson } from "./api.ts"

type Json = Record<string, unknown>

/** The recorded CISA KEV entries as VulnCheck's `advisory.VulnCheckKEV` (`cve` a list, snake-case dates). */
export const vulnCheckKev = (): Array<Json> =>
  jsonFiles("data/sources/cisa-kev").map((e) => ({
    vendorProject: e.vendorProject,
    product: e.product,
    shortDescription: e.shortDescription,
    vulnerabilityName: e.vulnerabilityName,
    required_action: e.requiredAction,
    knownRansomwareCampaignUse: e.knownRansomwareCampaignUse,
    cve: [e.cveID],
    cwes: e.cwes ?? [],
    date_added: `${String(e.dateAdded)}T00:00:00Z`,
    dueDate: `${String(e.dueDate)}T00:00:00Z`,
    cisa_date_added: `${String(e.dateAdded)}T00:00:00Z`,
    _timestamp: `${String(e.dateAdded)}T00:00:00Z`
  }))

/** The recorded NVD API 2.0 items as `api.NVD20CVEExtended` (the CVE object itself). */
export const vulnCheckNvd = (): Array<Json> =>
  jsonFiles("data/sources/nist-nvd").flatMap((doc) =>
    Array.isArray(doc.vulnerabilities) ? (doc.vulnerabilities as Array<{ cve: Json }>).map((v) => v.cve) : [doc]
  )

export interface VulnCheckState {
  kev: Array<Json>
  nvd: Array<Json>
}

/**
 * `GET /vulncheck/v3/index/{vulncheck-kev,vulncheck-nvd2}`: a Bearer token or
 * 401, `start_cursor=true` then `cursor=<_meta.next_cursor>`, `limit` up to
 * 100, `lastModStartDate` over `lastModified`.
 */
export const vulnCheckRoute = (state: VulnCheckState): Route => (ctx, req, res, url) => {
  const index = /^\/vulncheck\/v3\/index\/(vulncheck-kev|vulncheck-nvd2)$/.exec(url.pathname)?.[1]
  if (index === undefined) return false
  if (answerFault(ctx, req, res, url)) return true
  if (!/^Bearer \S+$/.test(req.headers.authorization ?? "")) {
    sendJson(res, 401, { error: true, errors: ["Unauthorized"] })
    note(ctx, req, url, 401)
    return true
  }
  const q = url.searchParams
  const since = q.get("lastModStartDate")
  const all = index === "vulncheck-kev" ? state.kev : state.nvd
  const chosen = since === null
    ? all
    : all.filter((r) => Date.parse(`${String(r.lastModified).slice(0, 19)}Z`) >= Date.parse(`${since}T00:00:00Z`))
  const limit = Math.min(100, Number(q.get("limit") ?? 100))
  const offset = q.get("start_cursor") === "true" ? 0 : offsetOf(q.get("cursor"))
  const data = chosen.slice(offset, offset + limit)
  const more = offset + limit < chosen.length
  sendJson(res, 200, {
    _benchmark: 0.01,
    _meta: {
      index,
      limit,
      total_documents: chosen.length,
      first_item: offset + 1,
      last_item: offset + data.length,
      next_cursor: more ? cursorOf(offset + limit) : ""
    },
    data
  })
  note(ctx, req, url, 200)
  return true
}
