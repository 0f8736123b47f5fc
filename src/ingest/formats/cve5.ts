export { NO_DESCRIPTION } from "./counts.ts"
import type { RecordCounts } from "../../../schema/Source.ts"
import { countRecord, NO_DESCRIPTION } from "./counts.ts"
import { sourcePage } from "./ids.ts"
import { distinct, text, timestamp, uri } from "./text.ts"

/** Builds CVE Record Format 5.1 records from what a source knows, within the schema's limits. */

export interface Provider {
  readonly orgId: string
  readonly shortName: string
}

export interface DescriptionInput {
  readonly lang?: string | undefined
  readonly value: string
  /** The source text is Markdown (OSV `details`): kept whole as supporting media when cut. */
  readonly markdown?: boolean
}

export interface ReferenceInput {
  readonly url: string
  readonly name?: string | undefined
  readonly tags?: ReadonlyArray<string> | undefined
}

export interface ProblemTypeInput {
  /** `CWE-79`, or any other text (`NVD-CWE-Other`). */
  readonly cwe: string
  readonly description?: string | undefined
}

export interface CnaContent {
  readonly title?: string | undefined
  readonly datePublic?: string | undefined
  readonly descriptions: ReadonlyArray<DescriptionInput>
  readonly affected: ReadonlyArray<Record<string, unknown>>
  readonly references: ReadonlyArray<ReferenceInput>
  readonly problemTypes: ReadonlyArray<ProblemTypeInput>
  readonly metrics: ReadonlyArray<Record<string, unknown>>
  readonly solutions?: ReadonlyArray<string>
}

export interface RecordInput {
  /** The source's own identifier (its fallback reference page). */
  readonly id: string
  /** `cveMetadata.cveId` when it differs from `id` (a native record that aliases a CVE: `recordCveId`). */
  readonly cveId?: string
  /** Spec source name, for the fallback reference. */
  readonly source: string
  readonly assigner: Provider
  readonly datePublished?: string | undefined
  readonly dateUpdated?: string | undefined
  readonly cna: CnaContent
  /** This source's enrichment container (see adp.ts). */
  readonly adp: Record<string, unknown>
}

export const PLACEHOLDER_PRODUCT = "n/a"

const LANG = /^[A-Za-z]{2,4}([_-][A-Za-z]{4})?([_-]([A-Za-z]{2}|[0-9]{3}))?$/
const ENGLISH = /^en([_-][A-Za-z]{4})?([_-]([A-Za-z]{2}|[0-9]{3}))?$/
const CWE = /^CWE-[1-9][0-9]*$/

const REFERENCE_TAGS = new Set([
  "broken-link",
  "customer-entitlement",
  "exploit",
  "government-resource",
  "issue-tracking",
  "mailing-list",
  "mitigation",
  "not-applicable",
  "patch",
  "permissions-required",
  "media-coverage",
  "product",
  "related",
  "release-notes",
  "signature",
  "technical-description",
  "third-party-advisory",
  "vendor-advisory",
  "vdb-entry"
])

/** Source tags (`Third Party Advisory`, `ADVISORY`, `x_refsource_CONFIRM`) to CVE 5 tags or `x_` extensions. */
export const referenceTag = (tag: string): string | undefined => {
  const t = tag.trim()
  if (t === "") return undefined
  if (t.startsWith("x_")) return t.slice(0, 128)
  const slug = t.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "")
  if (REFERENCE_TAGS.has(slug)) return slug
  const mapped: Record<string, string> = {
    "advisory": "vendor-advisory",
    "us-government-resource": "government-resource",
    "vdb": "vdb-entry",
    "fix": "patch",
    "report": "issue-tracking",
    "article": "media-coverage",
    "evidence": "exploit",
    "exploit-db": "exploit",
    "vdb-entry-": "vdb-entry"
  }
  return mapped[slug] ?? (slug === "" ? undefined : `x_${slug}`.slice(0, 128))
}

const descriptions = (items: ReadonlyArray<DescriptionInput>): Array<Record<string, unknown>> => {
  const out: Array<Record<string, unknown>> = []
  const seen = new Set<string>()
  for (const d of items) {
    const lang = d.lang !== undefined && LANG.test(d.lang) ? d.lang : "en"
    const value = text(d.value, 4096)
    if (value === undefined || seen.has(`${lang}\u0000${value}`)) continue
    seen.add(`${lang}\u0000${value}`)
    const whole = d.value.trim()
    out.push(
      value !== whole && Array.from(whole).length <= 16384
        ? {
          lang,
          value,
          supportingMedia: [{ type: d.markdown ? "text/markdown" : "text/plain", base64: false, value: whole }]
        }
        : { lang, value }
    )
  }
  if (!out.some((d) => ENGLISH.test(d.lang as string))) out.push({ lang: "en", value: NO_DESCRIPTION })
  return out
}

export const references = (items: ReadonlyArray<ReferenceInput>): Array<Record<string, unknown>> => {
  const byUrl = new Map<string, { name?: string; tags: Set<string> }>()
  for (const r of items) {
    const url = uri(r.url)
    if (url === undefined) continue
    const entry = byUrl.get(url) ?? { tags: new Set<string>() }
    const name = text(r.name, 512)
    if (entry.name === undefined && name !== undefined && name !== url) entry.name = name
    for (const t of r.tags ?? []) {
      const tag = referenceTag(t)
      if (tag !== undefined && tag.length >= 2) entry.tags.add(tag)
    }
    byUrl.set(url, entry)
  }
  return [...byUrl.entries()].slice(0, 512).map(([url, e]) => ({
    url,
    ...(e.name !== undefined ? { name: e.name } : {}),
    ...(e.tags.size > 0 ? { tags: distinct(e.tags) } : {})
  }))
}

const problemTypes = (items: ReadonlyArray<ProblemTypeInput>): Array<Record<string, unknown>> => {
  const seen = new Set<string>()
  const out: Array<Record<string, unknown>> = []
  for (const p of items) {
    const cwe = p.cwe.trim()
    if (cwe === "" || seen.has(cwe)) continue
    seen.add(cwe)
    const description = text(p.description, 4096) ?? cwe
    out.push({
      descriptions: [
        CWE.test(cwe)
          ? { type: "CWE", cweId: cwe, lang: "en", description }
          : { type: "text", lang: "en", description }
      ]
    })
  }
  return out
}

const uniqueJson = <T>(xs: ReadonlyArray<T>): Array<T> => {
  const seen = new Set<string>()
  return xs.filter((x) => {
    const k = JSON.stringify(x)
    return seen.has(k) ? false : (seen.add(k), true)
  })
}

/** The CVE record for one source's knowledge of `input.id`, with its `/info` counts. */
export const buildRecord = (
  input: RecordInput
): { readonly record: Record<string, unknown>; readonly counts: RecordCounts } => {
  const cna = input.cna
  const refs = references(cna.references)
  const pts = problemTypes(cna.problemTypes)
  const metrics = uniqueJson(cna.metrics)
  const affected = cna.affected.length > 0
    ? cna.affected
    : [{ vendor: PLACEHOLDER_PRODUCT, product: PLACEHOLDER_PRODUCT, defaultStatus: "unknown" }]
  const solutions = descriptions((cna.solutions ?? []).map((value) => ({ value }))).filter((d) =>
    d.value !== NO_DESCRIPTION
  )
  const title = text(cna.title, 256)
  const datePublic = timestamp(cna.datePublic)
  const container: Record<string, unknown> = {
    providerMetadata: { orgId: input.assigner.orgId, shortName: input.assigner.shortName },
    ...(title !== undefined ? { title } : {}),
    ...(datePublic !== undefined ? { datePublic } : {}),
    descriptions: descriptions(cna.descriptions),
    affected,
    references: refs.length > 0 ? refs : [{ url: sourcePage(input.source, input.id) }],
    ...(pts.length > 0 ? { problemTypes: pts } : {}),
    ...(metrics.length > 0 ? { metrics } : {}),
    ...(solutions.length > 0 ? { solutions } : {})
  }
  const datePublished = timestamp(input.datePublished)
  const dateUpdated = timestamp(input.dateUpdated)
  const record = {
    dataType: "CVE_RECORD",
    dataVersion: "5.1",
    cveMetadata: {
      cveId: input.cveId ?? input.id,
      assignerOrgId: input.assigner.orgId,
      assignerShortName: input.assigner.shortName,
      state: "PUBLISHED",
      ...(datePublished !== undefined ? { datePublished } : {}),
      ...(dateUpdated !== undefined ? { dateUpdated } : {})
    },
    containers: { cna: container, adp: [input.adp] }
  }
  return { record, counts: countRecord(record) }
}
