import type { Route } from "./api.ts"
import { answerFault, cursorOf, jsonFiles, note, offsetOf, sendJson } from "./api.ts"

type Json = Record<string, unknown>

const ECOSYSTEMS: Record<string, string> = {
  RubyGems: "rubygems",
  npm: "npm",
  PyPI: "pip",
  Maven: "maven",
  NuGet: "nuget",
  Packagist: "composer",
  Go: "go",
  "crates.io": "rust",
  Hex: "erlang",
  "GitHub Actions": "actions",
  Pub: "pub",
  SwiftURL: "swift"
}
const SEVERITY: Record<string, string> = { LOW: "low", MODERATE: "medium", HIGH: "high", CRITICAL: "critical" }

/** The REST API's `vulnerable_version_range` of one OSV range. */
const rangeText = (events: ReadonlyArray<Json>) => {
  const introduced = events.find((e) => e.introduced !== undefined)?.introduced as string | undefined
  const fixed = events.find((e) => e.fixed !== undefined)?.fixed as string | undefined
  const last = events.find((e) => e.last_affected !== undefined)?.last_affected as string | undefined
  const parts = introduced !== undefined && introduced !== "0" ? [`>= ${introduced}`] : []
  if (fixed !== undefined) parts.push(`< ${fixed}`)
  else if (last !== undefined) parts.push(`<= ${last}`)
  return { range: parts.join(", "), fixed }
}

/**
 * An advisory of github/advisory-database (OSV) in the shape GitHub's REST
 * API answers it (https://docs.github.com/en/rest/security-advisories/global-advisories):
 * one `vulnerabilities` entry per OSV range, `first_patched_version` a string.
 */
export const osvToRest = (o: Json): Json => {
  const dbs = (o.database_specific ?? {}) as Json
  const aliases = (o.aliases ?? []) as Array<string>
  const cve = aliases.find((a) => a.startsWith("CVE-")) ?? null
  const severity = (o.severity ?? []) as Array<Json>
  const vector = (type: string) => severity.find((s) => s.type === type)?.score as string | undefined
  return {
    ghsa_id: o.id,
    cve_id: cve,
    url: `https://api.github.com/advisories/${String(o.id)}`,
    html_url: `https://github.com/advisories/${String(o.id)}`,
    summary: o.summary,
    description: o.details ?? null,
    type: dbs.github_reviewed === false ? "unreviewed" : "reviewed",
    severity: SEVERITY[String(dbs.severity)] ?? "unknown",
    identifiers: [{ type: "GHSA", value: o.id }, ...(cve !== null ? [{ type: "CVE", value: cve }] : [])],
    references: ((o.references ?? []) as Array<Json>).map((r) => r.url),
    published_at: o.published,
    updated_at: o.modified,
    github_reviewed_at: dbs.github_reviewed_at ?? null,
    nvd_published_at: dbs.nvd_published_at ?? null,
    withdrawn_at: o.withdrawn ?? null,
    vulnerabilities: ((o.affected ?? []) as Array<Json>).flatMap((a) => {
      const pkg = a.package as Json
      const functions = ((a.ecosystem_specific as Json | undefined)?.affected_functions ?? []) as Array<string>
      return ((a.ranges ?? []) as Array<Json>).map((r) => {
        const { fixed, range } = rangeText(r.events as Array<Json>)
        return {
          package: { ecosystem: ECOSYSTEMS[String(pkg.ecosystem)] ?? "other", name: pkg.name },
          vulnerable_version_range: range,
          first_patched_version: fixed ?? null,
          vulnerable_functions: functions
        }
      })
    }),
    cvss_severities: {
      cvss_v3: { vector_string: vector("CVSS_V3") ?? null, score: null },
      cvss_v4: { vector_string: vector("CVSS_V4") ?? null, score: null }
    },
    cwes: ((dbs.cwe_ids ?? []) as Array<string>).map((cwe_id) => ({ cwe_id, name: cwe_id })),
    credits: []
  }
}

export const ghsaAdvisories = (): Array<Json> => jsonFiles("data/sources/ghsa").map(osvToRest)

export interface GhsaState {
  advisories: Array<Json>
  /** What `x-ratelimit-remaining` says next (it counts down a request at a time). */
  remaining: number
  /** Another origin the `Link` header sends the next page to (a publisher gone wrong). */
  linkOrigin?: string | undefined
}

/** `modified=>=…` (the one form of GitHub's date search the feed sends). */
const since = (modified: string | null) => modified === null ? -Infinity : Date.parse(modified.replace(/^>=/, ""))

/** `GET /ghsa/advisories`: GitHub's paging (`per_page`, `after` cursor, `Link: <…>; rel="next"`) and rate-limit headers. */
export const ghsaRoute = (state: GhsaState): Route => (ctx, req, res, url) => {
  if (url.pathname !== "/ghsa/advisories") return false
  if (answerFault(ctx, req, res, url)) return true
  const q = url.searchParams
  const perPage = Math.min(100, Number(q.get("per_page") ?? 30))
  const from = since(q.get("modified"))
  const chosen = state.advisories
    .filter((a) => Date.parse(String(a.updated_at)) >= from)
    .sort((a, b) =>
      Date.parse(String(a.updated_at)) - Date.parse(String(b.updated_at)) ||
      String(a.ghsa_id).localeCompare(String(b.ghsa_id))
    )
  const offset = offsetOf(q.get("after"))
  const page = chosen.slice(offset, offset + perPage)
  const headers: Record<string, string> = {
    "x-ratelimit-limit": "60",
    "x-ratelimit-remaining": String(Math.max(0, --state.remaining)),
    "x-ratelimit-reset": String(Math.floor(Date.now() / 1000) + 1),
    "x-ratelimit-resource": "core"
  }
  if (offset + perPage < chosen.length) {
    const next = new URL(url.pathname + url.search, state.linkOrigin ?? ctx.url("/"))
    next.searchParams.set("after", cursorOf(offset + perPage))
    headers.link = `<${next.toString()}>; rel="next"`
  }
  sendJson(res, 200, page, headers)
  note(ctx, req, url, 200)
  return true
}
