import type { IngestSource, ItemProblem, Normalised, UpstreamItem } from "../Upstream.ts"
import { enrichmentContainer } from "./adp.ts"
import { countRecord } from "./counts.ts"
import { CVE_ID, ghsaOfReference } from "./ids.ts"
import { type DocContext, itemOf, problem, type Read } from "./item.ts"
import { asArray, distinct, isRecord, timestamp } from "./text.ts"

/** CVE JSON 5.x records (cvelistV5, vulnrichment): one file, an array, or NDJSON lines of records. */

const cveIdOf = (doc: unknown): string | undefined =>
  isRecord(doc) && isRecord(doc.cveMetadata) && typeof doc.cveMetadata.cveId === "string"
    ? doc.cveMetadata.cveId
    : undefined

export function* items(doc: unknown, ctx: DocContext): Iterable<Read> {
  if (Array.isArray(doc)) {
    for (const [i, d] of doc.entries()) yield* one(d, ctx, i)
    return
  }
  if (isRecord(doc) && Array.isArray(doc.records)) {
    for (const [i, d] of doc.records.entries()) yield* one(d, ctx, i)
    return
  }
  yield* one(doc, ctx, undefined)
}

function* one(doc: unknown, ctx: DocContext, index: number | undefined): Iterable<Read> {
  const id = cveIdOf(doc)
  const at = index === undefined ? ctx.position : `${ctx.position}#${index}`
  if (id === undefined) return yield problem(at, "not a CVE JSON 5 record: no cveMetadata.cveId")
  if (!CVE_ID.test(id)) return yield problem(at, `invalid CVE id ${JSON.stringify(id)}`)
  if (!isRecord(doc) || doc.dataType !== "CVE_RECORD") return yield problem(at, `${id}: dataType is not CVE_RECORD`)
  yield itemOf(ctx, id, doc, index === undefined ? {} : { index })
}

/** GHSA ids a CVE record's references point at (advisory pages only), over all containers. */
const referencedGhsa = (record: Record<string, unknown>): Array<string> => {
  const containers = isRecord(record.containers) ? record.containers : {}
  const out: Array<string> = []
  for (const c of [containers.cna, ...asArray(containers.adp)]) {
    if (!isRecord(c)) continue
    for (const r of asArray(c.references)) {
      const g = isRecord(r) && typeof r.url === "string" ? ghsaOfReference(r.url) : undefined
      if (g !== undefined) out.push(g)
    }
  }
  return distinct(out)
}

/** Records are kept as published; 5.0 records become 5.1 (5.1 only adds optional members). */
export const normalise = (item: UpstreamItem, upstream: IngestSource): ReadonlyArray<Normalised> | ItemProblem => {
  const doc = item.parsed
  if (!isRecord(doc) || !isRecord(doc.cveMetadata) || !isRecord(doc.containers)) {
    return problem(item.position, "CVE record without cveMetadata/containers")
  }
  const meta = doc.cveMetadata
  if (!/^5\.[0-9]+(\.[0-9]+)?$/.test(String(doc.dataVersion))) {
    return problem(item.position, `${item.identifier}: unsupported dataVersion ${JSON.stringify(doc.dataVersion)}`)
  }
  const aliases = referencedGhsa(doc)
  const dateUpdated = timestamp(meta.dateUpdated) ?? timestamp(meta.datePublished)
  const adp = enrichmentContainer({
    source: "mitre",
    upstream,
    enrichmentSource: upstream === "vulnrichment" ? "cisagov/vulnrichment" : "CVEProject/cvelistV5",
    generatedAt: dateUpdated,
    aliases,
    dataCollected: ["cveRecord", ...(aliases.length > 0 ? ["aliases"] : [])]
  })
  // A REJECTED record's schema allows the CNA container only: it is kept without enrichment.
  const rejected = meta.state === "REJECTED"
  const record = rejected
    ? { ...doc, dataVersion: "5.1" }
    : { ...doc, dataVersion: "5.1", containers: { ...doc.containers, adp: [...asArray(doc.containers.adp), adp] } }
  return [{
    kind: "record",
    source: "mitre",
    upstream,
    identifier: item.identifier,
    ...(dateUpdated !== undefined ? { updatedAt: dateUpdated } : {}),
    record,
    aliases,
    referencedAliases: aliases,
    counts: countRecord(record),
    gcve: false
  }]
}
