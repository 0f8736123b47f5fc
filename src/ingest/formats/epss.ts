import type { EpssScore, ItemProblem, Normalised, UpstreamItem } from "../Upstream.ts"
import { canonicalId, CVE_ID } from "./ids.ts"
import { type DocContext, itemOf, problem, type Read } from "./item.ts"
import { dateOnly, isRecord } from "./text.ts"

/** FIRST EPSS CSV: `#model_version:v2026.06.15,score_date:2026-09-29T12:00:22Z`, then `cve,epss,percentile`. */

export interface EpssHeader {
  readonly modelVersion: string
  readonly date: string
}

/** The model/date comment line; files without one (older exports) give an empty model and no date. */
export const parseHeader = (line: string): EpssHeader | undefined => {
  if (!line.startsWith("#")) return undefined
  const fields = new Map(
    line.slice(1).split(",").map((kv) => {
      const i = kv.indexOf(":")
      return [kv.slice(0, i).trim(), kv.slice(i + 1).trim()] as const
    })
  )
  const date = dateOnly(fields.get("score_date"))
  const modelVersion = fields.get("model_version")
  return date !== undefined && modelVersion !== undefined ? { modelVersion, date } : undefined
}

export function* rowItems(
  rows: ReadonlyArray<{ row: Record<string, string>; line: number }>,
  header: EpssHeader | undefined,
  ctx: DocContext
): Iterable<Read> {
  for (const { row, line } of rows) {
    const at = `${ctx.fileName}:${line}`
    const cve = canonicalId(row.cve ?? "")
    const score = Number(row.epss)
    const percentile = Number(row.percentile)
    if (!CVE_ID.test(cve)) yield problem(at, `EPSS row without a CVE id (${JSON.stringify(row.cve ?? "")})`)
    else if (
      !(score >= 0 && score <= 1) || !(percentile >= 0 && percentile <= 1) || row.epss?.trim() === "" ||
      row.percentile?.trim() === ""
    ) {
      yield problem(at, `${cve}: epss/percentile must be numbers in [0, 1]`)
    } else if (header === undefined) yield problem(at, "EPSS file without its #model_version,score_date header")
    else {yield itemOf({ ...ctx, position: at }, cve, {
        cve,
        score,
        percentile,
        date: header.date,
        modelVersion: header.modelVersion
      })}
  }
}

export const normalise = (item: UpstreamItem): ReadonlyArray<Normalised> | ItemProblem => {
  const p = item.parsed
  if (!isRecord(p) || typeof p.cve !== "string" || typeof p.score !== "number" || typeof p.percentile !== "number") {
    return problem(item.position, "EPSS item without cve/score/percentile")
  }
  const score: EpssScore = {
    cve: p.cve,
    score: p.score,
    percentile: p.percentile,
    date: String(p.date),
    modelVersion: String(p.modelVersion)
  }
  return [{ kind: "epss", scores: [score] }]
}
