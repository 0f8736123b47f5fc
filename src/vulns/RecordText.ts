import { isOurs, withEpss } from "./EnrichmentContainer.ts"
import type { EpssScore } from "./EpssScore.ts"
import { asArray, distinct, isRecord } from "./JsonShapes.ts"

/**
 * Stored records are JSON text written once at ingestion and served as is.
 * The one read-time change, FIRST's EPSS score in this service's enrichment
 * container (`withEpss`), is a splice of that text at offsets found when it
 * was written, so a lookup neither parses nor re-serialises a record.
 *
 * `splice` (UTF-16 offsets into `text`): `[]` when the record has no
 * enrichment container (EPSS changes nothing), else `[collectedStart,
 * collectedEnd, epssStart, epssEnd]`: the value of `x_dataCollected`, and
 * the value of `x_epss` (start = end = the container's closing brace when it
 * has none). `null`: no splice known, read-time merge parses the record.
 */
export interface RecordText {
  readonly text: string
  readonly splice: ReadonlyArray<number> | null
}

const SENTINEL = "\u0000vdb:enrichment\u0000"

/** `JSON.stringify(container)` built member by member to learn where the two EPSS-dependent values sit. */
const containerText = (c: Record<string, unknown>) => {
  let text = "{"
  let collected: [number, number] | undefined
  let epss: [number, number] | undefined
  for (const [key, value] of Object.entries(c)) {
    const json = JSON.stringify(value)
    if (json === undefined) continue
    if (text.length > 1) text += ","
    text += `${JSON.stringify(key)}:`
    const span: [number, number] = [text.length, text.length + json.length]
    if (key === "x_dataCollected") collected = span
    if (key === "x_epss") epss = span
    text += json
  }
  text += "}"
  return { text, collected, epss: epss ?? [text.length - 1, text.length - 1] as [number, number] }
}

/** Serialises a normalised record for storage (equal to `JSON.stringify(record)`), with its EPSS splice points. */
export const recordText = (record: Record<string, unknown>): RecordText => {
  const containers = isRecord(record.containers) ? record.containers : undefined
  const adp = containers === undefined ? [] : asArray(containers.adp)
  const ours = adp.filter(isOurs)
  if (ours.length === 0) return { text: JSON.stringify(record), splice: [] }
  const own = ours[0]!
  const inner = containerText(own)
  if (ours.length > 1 || inner.collected === undefined || !Array.isArray(own.x_dataCollected)) {
    return { text: JSON.stringify(record), splice: null }
  }
  const outline = JSON.stringify({
    ...record,
    containers: { ...containers, adp: adp.map((c) => c === own ? SENTINEL : c) }
  })
  const marker = JSON.stringify(SENTINEL)
  const at = outline.indexOf(marker)
  if (at < 0 || outline.indexOf(marker, at + 1) >= 0) return { text: JSON.stringify(record), splice: null }
  return {
    text: outline.slice(0, at) + inner.text + outline.slice(at + marker.length),
    splice: [at + inner.collected[0], at + inner.collected[1], at + inner.epss[0], at + inner.epss[1]]
  }
}

/** The stored text with an EPSS score merged: exactly `JSON.stringify(withEpss(JSON.parse(text), score))`. */
export const textWithEpss = (stored: RecordText, score: EpssScore | undefined): string => {
  const { splice, text } = stored
  if (score === undefined || (splice !== null && splice.length === 0)) return text
  const x_epss = JSON.stringify({
    score: score.score,
    percentile: score.percentile,
    date: score.date,
    modelVersion: score.modelVersion
  })
  if (splice === null || splice.length !== 4) return JSON.stringify(withEpss(JSON.parse(text), score))
  const [cs, ce, es, ee] = splice as [number, number, number, number]
  const collected = JSON.stringify(distinct([...(JSON.parse(text.slice(cs, ce)) as Array<string>).map(String), "epss"]))
  const epss = es === ee ? `,"x_epss":${x_epss}` : x_epss
  return text.slice(0, cs) + collected + text.slice(ce, es) + epss + text.slice(ee)
}
