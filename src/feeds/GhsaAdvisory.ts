/**
 * GitHub's REST "global advisory" (https://docs.github.com/en/rest/security-advisories/global-advisories)
 * as the OSV record github/advisory-database publishes for the same advisory,
 * which is what the ingestion reads for `ghsa` (formats/osv.ts): one
 * normaliser, whichever way the advisory came. Fields the REST shape lacks
 * (OSV's `database_specific.last_known_affected_version_range`) stay out.
 */

type Json = Record<string, unknown>

const isRecord = (x: unknown): x is Json => typeof x === "object" && x !== null && !Array.isArray(x)
const str = (x: unknown) => typeof x === "string" && x.trim() !== "" ? x : undefined

/** REST `ecosystem` values to OSV ecosystem names (as in the advisory database's own OSV files). */
const ECOSYSTEMS: Record<string, string> = {
  rubygems: "RubyGems",
  npm: "npm",
  pip: "PyPI",
  maven: "Maven",
  nuget: "NuGet",
  composer: "Packagist",
  go: "Go",
  rust: "crates.io",
  erlang: "Hex",
  actions: "GitHub Actions",
  pub: "Pub",
  swift: "SwiftURL"
}

/** GitHub's severity words as the database's OSV files write them. */
const SEVERITY: Record<string, string> = { low: "LOW", medium: "MODERATE", high: "HIGH", critical: "CRITICAL" }

/**
 * `>= 2.0.0, < 2.15.0`, `< 1.2`, `<= 1.4`, `= 1.0` to OSV events; the first
 * patched version, when GitHub names one, is the fix. Undefined when the range
 * says nothing OSV can hold.
 */
export const rangeEvents = (range: string | undefined, patched: string | undefined) => {
  let introduced = "0"
  let fixed = patched
  let lastAffected: string | undefined
  let exact: string | undefined
  for (const part of (range ?? "").split(",").map((p) => p.trim()).filter((p) => p !== "")) {
    const m = /^(>=|>|<=|<|=)\s*(\S+)$/.exec(part)
    if (m === null) continue
    const [, op, version] = m as unknown as [string, string, string]
    if (op === ">=" || op === ">") introduced = version
    else if (op === "<") fixed ??= version
    else if (op === "<=") lastAffected = version
    else exact = version
  }
  if (exact !== undefined && fixed === undefined) return { versions: [exact] }
  const events: Array<Json> = [{ introduced }]
  if (fixed !== undefined) events.push({ fixed })
  else if (lastAffected !== undefined) events.push({ last_affected: lastAffected })
  return { ranges: [{ type: "ECOSYSTEM", events }] }
}

const affectedOf = (v: unknown): Array<Json> => {
  if (!isRecord(v) || !isRecord(v.package)) return []
  const ecosystem = str(v.package.ecosystem)
  const name = str(v.package.name)
  if (ecosystem === undefined || name === undefined) return []
  const patched = isRecord(v.first_patched_version)
    ? str(v.first_patched_version.identifier)
    : str(v.first_patched_version)
  const functions = Array.isArray(v.vulnerable_functions)
    ? v.vulnerable_functions.filter((f) => typeof f === "string")
    : []
  return [{
    package: { ecosystem: ECOSYSTEMS[ecosystem] ?? ecosystem, name },
    ...rangeEvents(str(v.vulnerable_version_range), patched),
    ...(functions.length > 0 ? { ecosystem_specific: { affected_functions: functions } } : {})
  }]
}

const severityOf = (a: Json): Array<Json> => {
  const out: Array<Json> = []
  const scores = isRecord(a.cvss_severities) ? a.cvss_severities : {}
  const v3 = isRecord(scores.cvss_v3) ? str(scores.cvss_v3.vector_string) : undefined
  const v4 = isRecord(scores.cvss_v4) ? str(scores.cvss_v4.vector_string) : undefined
  const legacy = isRecord(a.cvss) ? str(a.cvss.vector_string) : undefined
  const three = v3 ?? (legacy?.startsWith("CVSS:3") === true ? legacy : undefined)
  if (three !== undefined) out.push({ type: "CVSS_V3", score: three })
  if (v4 !== undefined) out.push({ type: "CVSS_V4", score: v4 })
  return out
}

/**
 * One REST advisory to OSV. Anything without a `ghsa_id` or `updated_at`
 * still comes out (without them), so the ingestion reports it as a bad record
 * at its position and the page's other advisories go on.
 */
export const advisoryToOsv = (a: unknown): unknown => {
  if (!isRecord(a)) return a
  const id = str(a.ghsa_id)
  const identifiers = Array.isArray(a.identifiers) ? a.identifiers.filter(isRecord) : []
  const aliases = [
    ...new Set([
      ...(str(a.cve_id) !== undefined ? [a.cve_id as string] : []),
      ...identifiers.filter((i) => i.type === "CVE").flatMap((i) => str(i.value) ?? [])
    ])
  ]
  const references = (Array.isArray(a.references) ? a.references : [])
    .flatMap((r) => str(r) ?? (isRecord(r) ? str(r.url) : undefined) ?? [])
    .map((url) => ({ type: url === a.html_url ? "ADVISORY" : "WEB", url }))
  const cwes = (Array.isArray(a.cwes) ? a.cwes : []).flatMap((c) => isRecord(c) ? str(c.cwe_id) ?? [] : [])
  const severity = str(a.severity)
  return {
    schema_version: "1.4.0",
    ...(id !== undefined ? { id } : {}),
    ...(str(a.updated_at) !== undefined ? { modified: a.updated_at } : {}),
    ...(str(a.published_at) !== undefined ? { published: a.published_at } : {}),
    ...(str(a.withdrawn_at) !== undefined ? { withdrawn: a.withdrawn_at } : {}),
    aliases,
    ...(str(a.summary) !== undefined ? { summary: a.summary } : {}),
    ...(str(a.description) !== undefined ? { details: a.description } : {}),
    severity: severityOf(a),
    affected: (Array.isArray(a.vulnerabilities) ? a.vulnerabilities : []).flatMap(affectedOf),
    references,
    database_specific: {
      cwe_ids: cwes,
      ...(severity !== undefined ? { severity: SEVERITY[severity] ?? severity.toUpperCase() } : {}),
      github_reviewed: a.type === "reviewed",
      github_reviewed_at: str(a.github_reviewed_at) ?? null,
      nvd_published_at: str(a.nvd_published_at) ?? null
    }
  }
}
