import type { ExploitRecord } from "../../vulns/Normalised.ts"
import type { IngestSource, ItemProblem, Normalised, UpstreamItem } from "../Upstream.ts"
import { enrichmentContainer, knownExploitedOf } from "./adp.ts"
import { buildRecord } from "./cve5.ts"
import { canonicalId, CVE_ID, exploitUuid, ORG } from "./ids.ts"
import { type DocContext, itemOf, problem, type Read } from "./item.ts"
import { asArray, asString, dateOnly, isRecord, unixSeconds } from "./text.ts"

/**
 * CISA KEV (the catalog JSON, one entry, or CSV rows) and VulnCheck KEV
 * (`data[]` of `advisory.VulnCheckKEV`, `cve` an array).
 */

const cvesOf = (e: Record<string, unknown>): Array<string> =>
  typeof e.cveID === "string" ?
    [canonicalId(e.cveID)]
    : asArray(e.cve).flatMap((c) => typeof c === "string" ? [canonicalId(c)] : [])

export function* items(doc: unknown, ctx: DocContext): Iterable<Read> {
  const list = isRecord(doc) && Array.isArray(doc.vulnerabilities) ?
    doc.vulnerabilities
    : isRecord(doc) && Array.isArray(doc.data) ?
    doc.data
    : Array.isArray(doc) ?
    doc
    : undefined
  if (list === undefined) return yield* one(doc, ctx, undefined)
  for (const [i, e] of list.entries()) yield* one(e, ctx, i)
}

export function* one(entry: unknown, ctx: DocContext, index: number | undefined): Iterable<Read> {
  const at = index === undefined ? ctx.position : `${ctx.position}#${index}`
  if (!isRecord(entry)) return yield problem(at, "KEV entry is not an object")
  const cves = cvesOf(entry)
  if (cves.length === 0) return yield problem(at, "KEV entry without cveID")
  const bad = cves.find((c) => !CVE_ID.test(c))
  if (bad !== undefined) return yield problem(at, `invalid CVE id ${JSON.stringify(bad)}`)
  const added = entry.dateAdded ?? entry.date_added
  if (dateOnly(added) === undefined) {
    return yield problem(at, `${cves[0]}: impossible dateAdded ${JSON.stringify(added)}`)
  }
  yield itemOf(ctx, cves[0]!, entry, index === undefined ? {} : { index })
}

/** `CWE-59, CWE-436` (CSV) or `["CWE-59"]` (JSON). */
const cwesOf = (x: unknown): Array<string> =>
  (Array.isArray(x) ? x : typeof x === "string" ? x.split(/[,;]/) : [])
    .flatMap((c) => typeof c === "string" && c.trim() !== "" ? [c.trim()] : [])

const URL_IN_TEXT = /https?:\/\/[^\s;,]+/g

export const normalise = (item: UpstreamItem, upstream: IngestSource): ReadonlyArray<Normalised> | ItemProblem => {
  const e = item.parsed
  if (!isRecord(e)) return problem(item.position, "KEV item is not an object")
  const source = upstream === "vulncheck-kev" ? "vulncheck-kev" : "cisa-kev"
  const dateAdded = dateOnly(e.dateAdded ?? e.date_added)
  if (dateAdded === undefined) return problem(item.position, `${item.identifier}: impossible dateAdded`)
  const vendor = asString(e.vendorProject) ?? "n/a"
  const product = asString(e.product) ?? "n/a"
  const requiredAction = asString(e.requiredAction ?? e.required_action)
  const dueDate = dateOnly(e.dueDate)
  const notes = asString(e.notes) ?? ""
  const ransomware = asString(e.knownRansomwareCampaignUse)
  const out: Array<Normalised> = []
  for (const cve of cvesOf(e)) {
    const kev = { cve, dateAdded, knownRansomwareCampaignUse: ransomware, dueDate, requiredAction }
    const adp = enrichmentContainer({
      source,
      upstream,
      enrichmentSource: source === "vulncheck-kev" ? "VulnCheck KEV" : "CISA Known Exploited Vulnerabilities catalog",
      generatedAt: `${dateAdded}T00:00:00Z`,
      aliases: [],
      dataCollected: ["descriptions", "affected", "references", "problemTypes", "solutions"],
      kev,
      extra: {
        ...(dueDate !== undefined ? { x_dueDate: dueDate } : {}),
        ...(asString(e.cisa_date_added) !== undefined ? { x_cisaDateAdded: dateOnly(e.cisa_date_added) } : {})
      }
    })
    const { record, counts } = buildRecord({
      id: cve,
      source,
      assigner: source === "vulncheck-kev" ? ORG.vulncheck : ORG.cisaKev,
      datePublished: `${dateAdded}T00:00:00Z`,
      cna: {
        title: asString(e.vulnerabilityName),
        descriptions: [asString(e.shortDescription) ?? asString(e.vulnerabilityName) ?? ""].map((value) => ({ value })),
        affected: [{ vendor, product, defaultStatus: "affected" }],
        references: [...notes.matchAll(URL_IN_TEXT)].map((m) => ({ url: m[0] })),
        problemTypes: cwesOf(e.cwes).map((cwe) => ({ cwe })),
        metrics: [],
        ...(requiredAction !== undefined ? { solutions: [requiredAction] } : {})
      },
      adp
    })
    out.push({
      kind: "record",
      source,
      upstream,
      identifier: cve,
      updatedAt: `${dateAdded}T00:00:00Z`,
      record,
      aliases: [],
      counts,
      gcve: false,
      knownExploited: knownExploitedOf(kev)
    })
    if (source === "vulncheck-kev") out.push(...vulncheckExploits(e, cve))
  }
  return out
}

/** VulnCheck KEV's XDB entries and reported exploitation, as exploit records. */
const vulncheckExploits = (e: Record<string, unknown>, cve: string): Array<Normalised> => {
  const xdb: Array<ExploitRecord> = asArray(e.vulncheck_xdb).flatMap((x) => {
    if (!isRecord(x) || typeof x.xdb_id !== "string") return []
    const createdAt = unixSeconds(x.date_added)
    return [{
      uuid: exploitUuid("vulncheck-xdb", x.xdb_id, cve),
      cveId: cve,
      source: "vulncheck-xdb",
      ...(asString(x.xdb_url) ? { url: x.xdb_url as string } : {}),
      type: "exploit" as const,
      title: `VulnCheck XDB ${x.xdb_id}${asString(x.exploit_type) ? ` (${x.exploit_type})` : ""}`,
      ...(createdAt !== undefined ? { createdAt } : {}),
      details: { vulnCheckXDB: { ...x } }
    }]
  })
  const reported: Array<ExploitRecord> = asArray(e.vulncheck_reported_exploitation).flatMap((r) => {
    if (!isRecord(r) || typeof r.url !== "string") return []
    const createdAt = unixSeconds(r.date_added)
    return [{
      uuid: exploitUuid("vulncheck-reported", r.url, cve),
      cveId: cve,
      source: "vulncheck-reported-exploitation",
      url: r.url,
      type: "sighting" as const,
      title: "Reported exploitation",
      ...(createdAt !== undefined ? { createdAt } : {}),
      details: { vulnCheckReportedExploitation: { ...r } }
    }]
  })
  return [
    ...(xdb.length > 0 ? [{ kind: "exploits" as const, summaryKey: "vulnCheckXDB" as const, exploits: xdb }] : []),
    ...(reported.length > 0
      ? [{ kind: "exploits" as const, summaryKey: "vulnCheckReportedExploitation" as const, exploits: reported }]
      : [])
  ]
}
