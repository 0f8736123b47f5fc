import { parse as parseYaml } from "yaml"
import type { IngestSource, ItemProblem, Normalised, UpstreamItem } from "../Upstream.ts"
import { csvRows } from "./csv.ts"
import * as epss from "./epss.ts"
import * as euvd from "./euvd.ts"
import * as exploitDb from "./exploitDb.ts"
import { type DocContext, problem, type Read } from "./item.ts"
import * as kev from "./kev.ts"
import * as metasploit from "./metasploit.ts"
import * as mitre from "./mitre.ts"
import * as nuclei from "./nuclei.ts"
import * as nvd from "./nvd.ts"
import * as osv from "./osv.ts"
import * as pocInGithub from "./pocInGithub.ts"

export { withEpss, GENERATOR_VERSION } from "./adp.ts"
export { countRecord } from "./counts.ts"
export { detectSource, type Detected } from "./detect.ts"
export { canonicalId, exploitUuid, isCveId, NON_CVE_RECORD_ID } from "./ids.ts"

/** Which summary key of spec 1 an exploit source counts under. */
export const EXPLOIT_SUMMARY_KEY = {
  "exploit-db": "exploitDb",
  "metasploit": "metasploit",
  "nuclei": "nuclei",
  "poc-in-github": "github",
  "vulncheck-xdb": "vulnCheckXDB",
  "vulncheck-reported-exploitation": "vulnCheckReportedExploitation"
} as const

/** Documents (parsed JSON/YAML) to items, per source. */
const documentItems = (source: IngestSource, doc: unknown, ctx: DocContext): Iterable<Read> => {
  switch (source) {
    case "mitre":
    case "vulnrichment":
      return mitre.items(doc, ctx)
    case "nist-nvd":
    case "vulncheck-nvd":
      return nvd.items(doc, ctx)
    case "cisa-kev":
    case "vulncheck-kev":
      return kev.items(doc, ctx)
    case "ghsa":
    case "osv":
      return osv.items(doc, ctx)
    case "euvd":
      return euvd.items(doc, ctx)
    case "exploit-db":
      return exploitDb.isMapping(doc) ? exploitDb.mappingItems(doc, ctx) : [problem(ctx.position, "Exploit-DB JSON must be the CVE → EDB-ID mapping")]
    case "metasploit":
      return metasploit.items(doc, ctx)
    case "nuclei":
      return nuclei.items(doc, ctx)
    case "poc-in-github":
      return pocInGithub.items(doc, ctx)
    case "epss":
      return [problem(ctx.position, "EPSS is read from FIRST's CSV")]
  }
}

function* csvItems(source: IngestSource, fileName: string, content: string): Iterable<Read> {
  const ctx: DocContext = { source, fileName, position: fileName, text: undefined }
  if (source === "epss") {
    const firstBreak = content.indexOf("\n")
    const first = firstBreak < 0 ? content : content.slice(0, firstBreak)
    const header = epss.parseHeader(first.trim())
    const body = header !== undefined || first.startsWith("#") ? content.slice(firstBreak + 1) : content
    const { rows, problems } = csvRows(fileName, body, body === content ? 0 : 1)
    yield* problems
    return yield* epss.rowItems(rows, header, ctx)
  }
  const { rows, problems } = csvRows(fileName, content)
  yield* problems
  if (source === "exploit-db") return yield* exploitDb.rowItems(rows, ctx)
  if (source === "cisa-kev" || source === "vulncheck-kev") {
    for (const { row, line } of rows) yield* kev.one(row, { ...ctx, position: `${fileName}:${line}` }, undefined)
    return
  }
  yield problem(fileName, `CSV is not a format of ${source}`)
}

function* ndjsonItems(source: IngestSource, fileName: string, content: string): Iterable<Read> {
  let lineNo = 0
  let start = 0
  while (start <= content.length) {
    const end = content.indexOf("\n", start)
    const line = (end < 0 ? content.slice(start) : content.slice(start, end)).trim()
    lineNo++
    start = end < 0 ? content.length + 1 : end + 1
    if (line === "") continue
    const position = `${fileName}:${lineNo}`
    let doc: unknown
    try {
      doc = JSON.parse(line)
    } catch (e) {
      yield problem(position, `malformed JSON: ${(e as Error).message}`)
      continue
    }
    yield* documentItems(source, doc, { source, fileName, position, text: line })
  }
}

/**
 * Splits one file's decoded text into upstream items. A malformed item gives an
 * ItemProblem (position + reason) and reading goes on; nothing here throws.
 */
export function* readItems(source: IngestSource, fileName: string, content: string): Iterable<UpstreamItem | ItemProblem> {
  const name = fileName.toLowerCase().replace(/\.gz$/, "")
  if (content.trim() === "") return yield problem(fileName, "empty file")
  if (name.endsWith(".csv")) return yield* csvItems(source, fileName, content)
  const ctx: DocContext = { source, fileName, position: fileName, text: content }
  if (name.endsWith(".yaml") || name.endsWith(".yml")) {
    let doc: unknown
    try {
      doc = parseYaml(content, { prettyErrors: false })
    } catch (e) {
      return yield problem(fileName, `malformed YAML: ${(e as Error).message.split("\n")[0]}`)
    }
    return yield* documentItems(source, doc, ctx)
  }
  if (name.endsWith(".ndjson") || name.endsWith(".jsonl")) return yield* ndjsonItems(source, fileName, content)
  let doc: unknown
  try {
    doc = JSON.parse(content)
  } catch (e) {
    // More than one line of JSON values (nuclei's cves.json): NDJSON whatever the file is called.
    const firstLine = content.trimStart().split("\n", 1)[0] ?? ""
    if (content.trim().includes("\n") && isJson(firstLine)) return yield* ndjsonItems(source, fileName, content)
    return yield problem(fileName, `malformed JSON: ${(e as Error).message}`)
  }
  yield* documentItems(source, doc, ctx)
}

const isJson = (s: string): boolean => {
  try {
    JSON.parse(s)
    return true
  } catch {
    return false
  }
}

/** Phase 2: one upstream item to records, exploits or EPSS scores. Pure and deterministic. */
export const normalise = (item: UpstreamItem): ReadonlyArray<Normalised> | ItemProblem => {
  try {
    switch (item.source) {
      case "mitre":
      case "vulnrichment":
        return mitre.normalise(item, item.source)
      case "nist-nvd":
      case "vulncheck-nvd":
        return nvd.normalise(item, item.source)
      case "cisa-kev":
      case "vulncheck-kev":
        return kev.normalise(item, item.source)
      case "ghsa":
      case "osv":
        return osv.normalise(item, item.source)
      case "euvd":
        return euvd.normalise(item, item.source)
      case "epss":
        return epss.normalise(item)
      case "exploit-db":
        return exploitDb.normalise(item)
      case "metasploit":
        return metasploit.normalise(item)
      case "nuclei":
        return nuclei.normalise(item)
      case "poc-in-github":
        return pocInGithub.normalise(item)
    }
  } catch (e) {
    // A mapping bug on one odd record must not stop a run: it is reported like a bad record.
    return problem(item.position, `normalisation failed: ${(e as Error).message}`)
  }
}

export const isItemProblem = (x: UpstreamItem | ItemProblem | ReadonlyArray<Normalised>): x is ItemProblem =>
  !Array.isArray(x) && "reason" in x && !("raw" in x)
