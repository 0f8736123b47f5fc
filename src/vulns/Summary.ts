import type { CveSummary, SummaryLink } from "../../schema/CveSummary.ts"
import type { SourceName } from "../../schema/Source.ts"
import type { Lookup } from "./VulnStoreShapes.ts"

/** The summary without the per-response members (`_timestamp`, `cache_hit`). */
export type SummaryBody = Omit<CveSummary, "_timestamp" | "cache_hit">

const enc = encodeURIComponent

/** Where each source publishes a record, and in which format. */
const sourceLink = (source: SourceName, id: string): SummaryLink => {
  switch (source) {
    case "mitre":
      return { type: source, format: "cvelistV5", url: `https://cveawg.mitre.org/api/cve/${enc(id)}` }
    case "nist-nvd":
      return {
        type: source,
        format: "nvd-json-2.0",
        url: `https://services.nvd.nist.gov/rest/json/cves/2.0?cveId=${enc(id)}`
      }
    case "vulncheck-nvd":
      return {
        type: source,
        format: "nvd-json-2.0",
        url: `https://api.vulncheck.com/v3/index/nist-nvd2?cve=${enc(id)}`
      }
    case "vulncheck-kev":
      return { type: source, format: "http", url: `https://api.vulncheck.com/v3/index/vulncheck-kev?cve=${enc(id)}` }
    case "cisa-kev":
      return {
        type: source,
        format: "http",
        url: `https://www.cisa.gov/known-exploited-vulnerabilities-catalog?search_api_fulltext=${enc(id)}`
      }
    case "ghsa":
      return { type: source, format: "osv", url: `https://api.osv.dev/v1/vulns/${enc(id)}` }
    case "osv":
      return { type: source, format: "osv", url: `https://api.osv.dev/v1/vulns/${enc(id)}` }
    case "euvd":
      return { type: source, format: "http", url: `https://euvdservices.enisa.europa.eu/api/enisaid?id=${enc(id)}` }
  }
}

const seconds = (d: Date) => Math.floor(d.getTime() / 1000)

/** Builds `/info` from the store's lookup; undefined when no source knows the identifier (404). */
export const buildSummary = (identifier: string, lookup: Lookup): SummaryBody | undefined => {
  if (lookup.records.length === 0) return undefined
  const processing = new Map<SourceName, boolean>()
  const counts = { references: 0, problemTypes: 0, metrics: 0, affected: 0, impacts: 0, descriptions: 0, scorecards: 0 }
  const links: Array<SummaryLink> = [
    { type: "page", format: "http", url: `https://www.cve.org/CVERecord?id=${enc(identifier)}` }
  ]
  const seenLinks = new Set<string>()
  let gcve = false
  let lastFetched = 0
  let lastEnriched: number | null = null
  for (const r of lookup.records) {
    // Looked up without bodies: the store's flag, not a null record, says whether it is still processing.
    const isProcessing = r.processing
    processing.set(r.source, (processing.get(r.source) ?? true) && isProcessing)
    gcve ||= r.gcve
    lastFetched = Math.max(lastFetched, seconds(r.fetchedAt))
    if (r.enrichedAt !== null) lastEnriched = Math.max(lastEnriched ?? 0, seconds(r.enrichedAt))
    if (!isProcessing) {
      for (const key of Object.keys(counts) as Array<keyof typeof counts>) counts[key] += r.counts[key]
    }
    const link = sourceLink(r.source, r.identifier)
    if (!seenLinks.has(link.url)) {
      seenLinks.add(link.url)
      links.push(link)
    }
  }
  return {
    _identifier: identifier,
    matched: true,
    gcve,
    lastFetchedAt: lastFetched,
    lastEnrichedAt: lastEnriched,
    sources: [...processing].map(([name, isProcessing]) => ({ name, processing: isProcessing })),
    aliases: [...lookup.aliases],
    ...counts,
    links
  }
}
