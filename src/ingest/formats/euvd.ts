import type { IngestSource, ItemProblem, Normalised, UpstreamItem } from "../Upstream.ts"
import { enrichmentContainer } from "./adp.ts"
import { buildRecord } from "./cve5.ts"
import { canonicalId, ORG, recordAliases, recordCveId } from "./ids.ts"
import { type DocContext, itemOf, problem, type Read } from "./item.ts"
import { metricFromVector } from "./metrics.ts"
import { asArray, asString, distinct, isRecord, timestamp } from "./text.ts"

/** ENISA EUVD: API items, `{items, total}` search responses, or arrays (`lastvulnerabilities`). */

const EUVD_ID = /^EUVD-[0-9]{4}-[0-9]+$/
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
const EUVD_DATE = /^([A-Z][a-z]{2}) (\d{1,2}), (\d{4}), (\d{1,2}):(\d{2}):(\d{2})\s?(AM|PM)$/

/** `Sep 29, 1999, 4:00:00 AM` (UTC) to ISO 8601; ISO input passes through; anything else is undefined. */
export const euvdDate = (value: unknown): string | undefined => {
  if (typeof value !== "string") return undefined
  const v = value.trim().replace(/\u202f/g, " ")
  const m = EUVD_DATE.exec(v)
  if (m === null) return timestamp(v)
  const month = MONTHS.indexOf(m[1]!)
  const day = Number(m[2])
  let hour = Number(m[4])
  if (month < 0 || hour < 1 || hour > 12) return undefined
  hour = (hour % 12) + (m[7] === "PM" ? 12 : 0)
  const d = new Date(Date.UTC(Number(m[3]), month, day, hour, Number(m[5]), Number(m[6])))
  if (d.getUTCDate() !== day || d.getUTCMonth() !== month) return undefined
  return timestamp(d.toISOString().replace(".000Z", "Z"))
}

const lines = (x: unknown): Array<string> =>
  typeof x === "string" ? x.split(/\r?\n/).map((s) => s.trim()).filter((s) => s !== "") : []

export function* items(doc: unknown, ctx: DocContext): Iterable<Read> {
  const list = isRecord(doc) && Array.isArray(doc.items) ? doc.items : Array.isArray(doc) ? doc : undefined
  if (list === undefined) return yield* one(doc, ctx, undefined)
  for (const [i, e] of list.entries()) yield* one(e, ctx, i)
}

function* one(e: unknown, ctx: DocContext, index: number | undefined): Iterable<Read> {
  const at = index === undefined ? ctx.position : `${ctx.position}#${index}`
  if (!isRecord(e) || typeof e.id !== "string") return yield problem(at, "not an EUVD item: no id")
  if (!EUVD_ID.test(e.id)) return yield problem(at, `invalid EUVD id ${JSON.stringify(e.id)}`)
  for (const k of ["datePublished", "dateUpdated", "exploitedSince"] as const) {
    if (e[k] !== undefined && e[k] !== null && e[k] !== "" && euvdDate(e[k]) === undefined) {
      return yield problem(at, `${e.id}: impossible date ${k}=${JSON.stringify(e[k])}`)
    }
  }
  yield itemOf(ctx, e.id, e, index === undefined ? {} : { index })
}

/** `3.1.0 <3.1.2`, `0.0.0 ≤2.13.0`, `7.2.4`: EUVD product versions to CVE 5 version entries. */
const versionsOf = (v: unknown): Array<Record<string, unknown>> => {
  const s = asString(v)
  if (s === undefined || s === "n/a") return []
  const m = /^(\S+) (<|≤|<=)(\S+)$/.exec(s)
  if (m === null) return [{ version: s.slice(0, 1024), status: "affected" }]
  const start = m[1] === "unspecified" ? "0" : m[1]!
  return [{
    version: start,
    status: "affected",
    versionType: "custom",
    ...(m[2] === "<" ? { lessThan: m[3] } : { lessThanOrEqual: m[3] })
  }]
}

export const normalise = (item: UpstreamItem, upstream: IngestSource): ReadonlyArray<Normalised> | ItemProblem => {
  const e = item.parsed
  if (!isRecord(e) || typeof e.id !== "string") return problem(item.position, "EUVD item without id")
  const id = e.id
  const aliases = distinct(lines(e.aliases).map(canonicalId)).filter((a) => a !== id)
  const cveId = recordCveId(id, aliases)
  const vendorOf = (p: Record<string, unknown>): string => {
    const own = isRecord(p.product) && isRecord(p.product.vendor) ? asString(p.product.vendor.name) : undefined
    const first = asArray(e.enisaIdVendor).find(isRecord)
    return own ?? (first && isRecord(first.vendor) ? asString(first.vendor.name) : undefined) ?? "n/a"
  }
  const affected = asArray(e.enisaIdProduct).flatMap((p) => {
    if (!isRecord(p) || !isRecord(p.product)) return []
    const versions = versionsOf(p.product_version)
    return [{
      vendor: vendorOf(p).slice(0, 512),
      product: (asString(p.product.name) ?? "n/a").slice(0, 2048),
      ...(versions.length > 0 ? { versions, defaultStatus: "unaffected" } : { defaultStatus: "unknown" })
    }]
  })
  const vector = asString(e.baseScoreVector)
  const metric = vector === undefined ?
    undefined
    : metricFromVector(
      vector,
      asString(e.baseScoreVersion),
      typeof e.baseScore === "number" && e.baseScore >= 0 ? e.baseScore : undefined
    )
  const published = euvdDate(e.datePublished)
  const updated = euvdDate(e.dateUpdated)
  const exploitedSince = euvdDate(e.exploitedSince)
  const epss = typeof e.epss === "number"
    ? { score: Math.round(e.epss * 1000) / 100000, source: "euvd", date: (updated ?? published)?.slice(0, 10) }
    : undefined
  const adp = enrichmentContainer({
    source: "euvd",
    upstream,
    enrichmentSource: "ENISA EUVD API",
    generatedAt: updated ?? published,
    aliases: recordAliases(id, cveId, aliases),
    dataCollected: ["descriptions", "affected", "references", "aliases", ...(metric ? ["metrics"] : [])],
    epss,
    extra: {
      ...(exploitedSince !== undefined ? { x_exploitedSince: exploitedSince } : {}),
      ...(asString(e.enisaUuid) ? { x_enisaUuid: e.enisaUuid } : {}),
      ...(asString(e.assigner) ? { x_assigner: e.assigner } : {})
    }
  })
  const { record, counts } = buildRecord({
    id,
    cveId,
    source: "euvd",
    assigner: ORG.enisa,
    datePublished: published,
    dateUpdated: updated,
    cna: {
      descriptions: asString(e.description) ? [{ value: e.description as string }] : [],
      affected,
      references: lines(e.references).map((url) => ({ url })),
      problemTypes: [],
      metrics: metric ? [metric] : []
    },
    adp
  })
  return [{
    kind: "record",
    source: "euvd",
    upstream,
    identifier: id,
    ...(updated !== undefined ? { updatedAt: updated } : {}),
    record,
    aliases,
    counts,
    gcve: false
  }]
}
