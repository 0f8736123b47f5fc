import type { IngestSource } from "../Upstream.ts"
import * as euvd from "./euvd.ts"
import * as exploitDb from "./exploitDb.ts"
import { type DocContext, problem, type Read } from "./item.ts"
import type { JsonSplitOptions } from "./jsonSplit.ts"
import * as kev from "./kev.ts"
import * as metasploit from "./metasploit.ts"
import * as mitre from "./mitre.ts"
import * as nuclei from "./nuclei.ts"
import * as nvd from "./nvd.ts"
import * as osv from "./osv.ts"
import * as pocInGithub from "./pocInGithub.ts"

/**
 * Documents (parsed JSON/YAML) to items, per source. A document that cannot be read (one nested a
 * few thousand levels deep overflows the stack of the serialisation every item's raw text is) is a
 * problem at its own position: the next record of the file is read as usual. Before, the error
 * ended the whole file, and the valid records after it were neither stored nor counted.
 */
export function* documentItems(source: IngestSource, doc: unknown, ctx: DocContext): Iterable<Read> {
  try {
    yield* itemsBySource(source, doc, ctx)
  } catch (cause) {
    yield problem(ctx.position, `cannot read the record: ${cause instanceof Error ? cause.message : String(cause)}`)
  }
}

const itemsBySource = (source: IngestSource, doc: unknown, ctx: DocContext): Iterable<Read> => {
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
      return exploitDb.isMapping(doc)
        ? exploitDb.mappingItems(doc, ctx)
        : [problem(ctx.position, "Exploit-DB JSON must be the CVE → EDB-ID mapping")]
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

/**
 * How a big JSON document of a source is cut into records: the lists its
 * reader iterates (`mitre.items` walks a top-level array or `records`, …), or
 * every member for the mappings (CVE → EDB ids, CVE → PoC index, module name →
 * Metasploit module). Anything else is one record, read whole (up to the cap).
 */
export const splitOptions = (source: IngestSource, max: number): JsonSplitOptions => {
  switch (source) {
    case "mitre":
    case "vulnrichment":
      return { topArray: true, lists: ["records"], members: false, max }
    case "nist-nvd":
    case "vulncheck-nvd":
    case "cisa-kev":
    case "vulncheck-kev":
      return { topArray: true, lists: ["vulnerabilities", "data"], members: false, max }
    case "ghsa":
    case "osv":
      return { topArray: true, lists: ["vulns"], members: false, max }
    case "euvd":
      return { topArray: true, lists: ["items"], members: false, max }
    case "nuclei":
      return { topArray: true, lists: [], members: false, max }
    case "exploit-db":
    case "poc-in-github":
    case "metasploit":
      return { topArray: false, lists: [], members: true, max }
    case "epss":
      return { topArray: false, lists: [], members: false, max }
  }
}

/** Members a mapping's shape is decided on: the sources' own checks look at the first 20. */
export const SHAPE_MEMBERS = 20

/** Whether a member-wise document (its first members) is the mapping its source cuts per member. */
export const isMemberMapping = (source: IngestSource, first: Record<string, unknown>): boolean => {
  switch (source) {
    case "exploit-db":
      return exploitDb.isMapping(first)
    case "poc-in-github":
      return pocInGithub.isIndex(first)
    case "metasploit":
      return !(typeof first.cve === "string" && Array.isArray(first.modules))
    default:
      return false
  }
}

/**
 * Moves positions a source's reader gave element 0 of a one-element wrapper
 * (`file#0`, `file#0#…`) to the element's real index.
 */
const reindex = function*(reads: Iterable<Read>, base: string, index: number, only0: boolean): Iterable<Read> {
  const zero = `${base}#0`
  for (const r of reads) {
    if (r.position === zero || r.position.startsWith(`${zero}#`)) {
      yield index === 0 ? r : { ...r, position: `${base}#${index}${r.position.slice(zero.length)}` }
    } else if (!only0) yield r
  }
}

/**
 * The reads of one element of a split list, identical to what the source's
 * reader gives that element of the whole document: the element is wrapped in
 * the same container shape, alone, and its positions moved to its index.
 * `single` is NVD's rule that a response with one CVE is not indexed; NVD
 * indexes otherwise, so an element of a longer list is read as the first of
 * two (only its own reads are kept).
 */
export const elementReads = (
  source: IngestSource,
  list: string | undefined,
  value: unknown,
  index: number,
  ctx: DocContext,
  single: boolean
): Iterable<Read> => {
  const nvdMany = (source === "nist-nvd" || source === "vulncheck-nvd") && list === "vulnerabilities" && !single
  const elements = nvdMany ? [value, value] : [value]
  const wrapper = list === undefined ? elements : { [list]: elements }
  return reindex(documentItems(source, wrapper, ctx), ctx.position, index, nvdMany)
}

/** The reads of one member of a mapping, as the source's reader gives it within the whole document. */
export const memberReads = (
  source: IngestSource,
  key: string,
  value: unknown,
  index: number,
  ctx: DocContext
): Iterable<Read> => {
  const one = { [key]: value }
  const reads = source === "exploit-db" ? exploitDb.mappingItems(one, ctx) : documentItems(source, one, ctx)
  return reindex(reads, ctx.position, index, false)
}
