import type { RecordCounts } from "../../schema/Source.ts"
import { asArray, isRecord } from "./JsonShapes.ts"

/** Text the schema requires where a source has none; excluded from counts. */
export const NO_DESCRIPTION = "No description provided by the source."

const isPlaceholderProduct = (p: unknown): boolean =>
  isRecord(p) && p.vendor === "n/a" && p.product === "n/a" && p.defaultStatus === "unknown" && p.versions === undefined

/**
 * The `/info` counts of one normalised record, over its CNA container and every
 * ADP container: references count distinct URLs (the CVE Program container
 * repeats the CNA's), placeholders the schema forces on us count as nothing.
 */
export const countRecord = (record: Record<string, unknown>): RecordCounts => {
  const containers = isRecord(record.containers) ? record.containers : {}
  const all = [containers.cna, ...asArray(containers.adp)].filter(isRecord)
  const urls = new Set<string>()
  let problemTypes = 0
  let metrics = 0
  let affected = 0
  let impacts = 0
  let descriptions = 0
  let scorecards = 0
  for (const c of all) {
    for (const r of asArray(c.references)) if (isRecord(r) && typeof r.url === "string") urls.add(r.url)
    for (const p of asArray(c.problemTypes)) if (isRecord(p)) problemTypes += asArray(p.descriptions).length
    for (const m of asArray(c.metrics)) {
      metrics++
      if (isRecord(m) && isRecord(m.other) && /scorecard/i.test(String(m.other.type))) scorecards++
    }
    affected += asArray(c.affected).filter((p) => !isPlaceholderProduct(p)).length
    impacts += asArray(c.impacts).length
    descriptions += asArray(c.descriptions).filter((d) => !(isRecord(d) && d.value === NO_DESCRIPTION)).length
    scorecards += asArray(c.x_scorecards).length
  }
  return { references: urls.size, problemTypes, metrics, affected, impacts, descriptions, scorecards }
}
