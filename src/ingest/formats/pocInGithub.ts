import type { ExploitRecord } from "../../vulns/Normalised.ts"
import type { ItemProblem, Normalised, UpstreamItem } from "../Upstream.ts"
import { canonicalId, CVE_ID, exploitUuid } from "./ids.ts"
import { type DocContext, itemOf, problem, type Read } from "./item.ts"
import { asString, isRecord, unixSeconds } from "./text.ts"

/** nomi-sec/PoC-in-GitHub: per-CVE JSON (an array of GitHub repositories) and the CVE → file index. */

export const isIndex = (doc: unknown): doc is Record<string, unknown> =>
  isRecord(doc) && Object.entries(doc).slice(0, 20).every(([k, v]) => /^CVE-/i.test(k) && typeof v === "string")

export function* items(doc: unknown, ctx: DocContext): Iterable<Read> {
  if (isIndex(doc)) {
    let i = 0
    for (const [key, url] of Object.entries(doc)) {
      const cve = canonicalId(key)
      // The index mirrors file names of nomi-sec/PoC-in-GitHub, some truncated (`CVE-2013-225`): no CVE, no record.
      if (CVE_ID.test(cve)) yield itemOf(ctx, `index:${cve}`, { cve, url }, { index: i })
      i++
    }
    return
  }
  if (Array.isArray(doc)) {
    const m = /(CVE-\d{4}-\d{4,19})\.json$/i.exec(ctx.fileName)
    if (m === null) return yield problem(ctx.position, "PoC-in-GitHub list whose file name names no CVE")
    return yield itemOf(ctx, canonicalId(m[1]!), doc)
  }
  yield problem(ctx.position, "neither a PoC-in-GitHub per-CVE list nor the index")
}

/** `https://raw.githubusercontent.com/nomi-sec/PoC-in-GitHub/master/2003/CVE-2003-0127.json` to its GitHub page. */
const pageOf = (raw: string): string =>
  raw.replace(
    /^https:\/\/raw\.githubusercontent\.com\/([^/]+)\/([^/]+)\/([^/]+)\//,
    "https://github.com/$1/$2/blob/$3/"
  )

export const normalise = (item: UpstreamItem): ReadonlyArray<Normalised> | ItemProblem => {
  const p = item.parsed
  if (isRecord(p) && typeof p.cve === "string" && typeof p.url === "string") {
    const exploit: ExploitRecord = {
      uuid: exploitUuid("poc-in-github", "index", p.cve),
      cveId: p.cve,
      source: "poc-in-github",
      url: pageOf(p.url),
      type: "poc",
      title: `PoC-in-GitHub list for ${p.cve}`,
      details: { github: { indexUrl: p.url } }
    }
    return [{ kind: "exploits", summaryKey: "github", exploits: [exploit] }]
  }
  if (!Array.isArray(p)) return problem(item.position, "PoC-in-GitHub item is not a repository list")
  const cve = item.identifier
  // A repository listing: the PoC's own code lives in the repository, not here, so no raw body.
  const exploits: Array<ExploitRecord> = []
  for (const [i, r] of p.entries()) {
    if (!isRecord(r) || (typeof r.id !== "number" && typeof r.full_name !== "string")) {
      return problem(`${item.position}#${i}`, "repository without id or full_name")
    }
    const createdAt = unixSeconds(r.created_at)
    const owner = isRecord(r.owner) ? asString(r.owner.login) : undefined
    exploits.push({
      uuid: exploitUuid("poc-in-github", String(r.id ?? r.full_name), cve),
      cveId: cve,
      source: "poc-in-github",
      ...(asString(r.html_url) ? { url: r.html_url as string } : {}),
      type: "poc",
      title: asString(r.description) ?? asString(r.full_name) ?? String(r.id),
      ...(createdAt !== undefined ? { createdAt } : {}),
      details: {
        github: {
          id: r.id,
          fullName: r.full_name,
          ...(owner ? { owner } : {}),
          ...(typeof r.stargazers_count === "number" ? { stars: r.stargazers_count } : {}),
          ...(typeof r.forks_count === "number" ? { forks: r.forks_count } : {}),
          ...(unixSeconds(r.pushed_at) !== undefined ? { pushedAt: unixSeconds(r.pushed_at) } : {}),
          ...(unixSeconds(r.updated_at) !== undefined ? { updatedAt: unixSeconds(r.updated_at) } : {})
        }
      }
    })
  }
  return [{ kind: "exploits", summaryKey: "github", exploits }]
}
