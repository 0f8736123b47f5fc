import type { IngestSource, ItemProblem, Normalised, UpstreamItem } from "../Upstream.ts"
import { enrichmentContainer } from "./adp.ts"
import { affectedFromConfigurations } from "./cpe.ts"
import { buildRecord, type ProblemTypeInput } from "./cve5.ts"
import { CVE_ID, ORG } from "./ids.ts"
import { type DocContext, itemOf, problem, type Read } from "./item.ts"
import { cvssMetric, otherMetric } from "./metrics.ts"
import { asArray, asString, dateOnly, isRecord, timestamp } from "./text.ts"

/** NVD CVE API 2.0: responses (`vulnerabilities[].cve`), arrays of them, or bare `cve` objects (fkie feeds). */

export function* items(doc: unknown, ctx: DocContext): Iterable<Read> {
  if (isRecord(doc) && Array.isArray(doc.vulnerabilities)) {
    const many = doc.vulnerabilities.length !== 1
    for (const [i, v] of doc.vulnerabilities.entries()) {
      const cve = isRecord(v) ? v.cve : undefined
      yield* one(cve, ctx, many ? i : undefined, many)
    }
    return
  }
  const list = Array.isArray(doc) ? doc : isRecord(doc) && Array.isArray(doc.data) ? doc.data : undefined
  if (list !== undefined) {
    for (const [i, v] of list.entries()) yield* one(isRecord(v) && isRecord(v.cve) ? v.cve : v, ctx, i, true)
    return
  }
  yield* one(isRecord(doc) && isRecord(doc.cve) ? doc.cve : doc, ctx, undefined, false)
}

function* one(cve: unknown, ctx: DocContext, index: number | undefined, split: boolean): Iterable<Read> {
  const at = index === undefined ? ctx.position : `${ctx.position}#${index}`
  if (!isRecord(cve) || typeof cve.id !== "string") return yield problem(at, "not an NVD CVE object: no cve.id")
  if (!CVE_ID.test(cve.id)) return yield problem(at, `invalid CVE id ${JSON.stringify(cve.id)}`)
  if (cve.published !== undefined && timestamp(cve.published) === undefined) {
    return yield problem(at, `${cve.id}: impossible date published=${JSON.stringify(cve.published)}`)
  }
  // The item is the `cve` object (the envelope only says when NVD served it), the same from any response.
  yield itemOf(ctx, cve.id, cve, index === undefined || !split ? {} : { index })
}

const cveObject = (parsed: unknown): Record<string, unknown> | undefined => {
  if (isRecord(parsed) && Array.isArray(parsed.vulnerabilities)) {
    const v = parsed.vulnerabilities[0]
    return isRecord(v) && isRecord(v.cve) ? v.cve : undefined
  }
  if (isRecord(parsed) && isRecord(parsed.cve)) return parsed.cve
  return isRecord(parsed) ? parsed : undefined
}

const METRIC_LISTS = ["cvssMetricV40", "cvssMetricV31", "cvssMetricV30", "cvssMetricV2"] as const

export const normalise = (item: UpstreamItem, upstream: IngestSource): ReadonlyArray<Normalised> | ItemProblem => {
  const cve = cveObject(item.parsed)
  if (cve === undefined || typeof cve.id !== "string") return problem(item.position, "NVD item without cve.id")
  const id = cve.id
  const metricsIn = isRecord(cve.metrics) ? cve.metrics : {}
  const metrics: Array<Record<string, unknown>> = []
  for (const list of METRIC_LISTS) {
    for (const m of asArray(metricsIn[list])) {
      const metric = isRecord(m) && isRecord(m.cvssData) ? cvssMetric(m.cvssData) : undefined
      if (metric !== undefined) metrics.push(metric)
    }
  }
  for (const [list, entries] of Object.entries(metricsIn)) {
    if (!list.startsWith("ssvc")) continue
    for (const m of asArray(entries)) {
      const metric = isRecord(m) ? otherMetric("ssvc", m.ssvcData) : undefined
      if (metric !== undefined) metrics.push(metric)
    }
  }
  const problemTypes: Array<ProblemTypeInput> = []
  for (const w of asArray(cve.weaknesses)) {
    for (const d of isRecord(w) ? asArray(w.description) : []) {
      const v = isRecord(d) ? asString(d.value) : undefined
      if (v !== undefined) problemTypes.push({ cwe: v })
    }
  }
  const references = asArray(cve.references).flatMap((r) =>
    isRecord(r) && typeof r.url === "string"
      ? [{ url: r.url, tags: asArray(r.tags).filter((t): t is string => typeof t === "string") }]
      : []
  )
  const kevDate = dateOnly(cve.cisaExploitAdd)
  const kev = kevDate === undefined ? undefined : {
    cve: id,
    dateAdded: kevDate,
    dueDate: dateOnly(cve.cisaActionDue),
    requiredAction: asString(cve.cisaRequiredAction)
  }
  const updatedAt = timestamp(cve.lastModified) ?? timestamp(cve.published)
  const source = upstream === "vulncheck-nvd" ? "vulncheck-nvd" : "nist-nvd"
  const adp = enrichmentContainer({
    source,
    upstream,
    enrichmentSource: upstream === "vulncheck-nvd" ? "VulnCheck NVD++ (NVD CVE API 2.0)" : "NVD CVE API 2.0",
    generatedAt: updatedAt,
    aliases: [],
    dataCollected: ["descriptions", "metrics", "problemTypes", "affected", "references"],
    kev,
    extra: {
      ...(asString(cve.vulnStatus) ? { x_vulnStatus: cve.vulnStatus } : {}),
      ...(asString(cve.sourceIdentifier) ? { x_sourceIdentifier: cve.sourceIdentifier } : {}),
      ...(asString(cve.cisaVulnerabilityName) ? { x_cisaVulnerabilityName: cve.cisaVulnerabilityName } : {})
    }
  })
  const { record, counts } = buildRecord({
    id,
    source,
    assigner: upstream === "vulncheck-nvd" ? ORG.vulncheck : ORG.nvd,
    datePublished: asString(cve.published),
    dateUpdated: asString(cve.lastModified),
    cna: {
      descriptions: asArray(cve.descriptions).flatMap((d) =>
        isRecord(d) && typeof d.value === "string" ? [{ lang: asString(d.lang), value: d.value }] : []
      ),
      affected: affectedFromConfigurations(cve.configurations),
      references,
      problemTypes,
      metrics,
      ...(kev?.requiredAction !== undefined ? { solutions: [kev.requiredAction] } : {})
    },
    adp
  })
  return [{
    kind: "record",
    source,
    upstream,
    identifier: id,
    ...(updatedAt !== undefined ? { updatedAt } : {}),
    record,
    aliases: [],
    counts,
    gcve: false
  }]
}
