import type { IngestSource, ItemProblem, Normalised, UpstreamItem } from "../Upstream.ts"
import * as epss from "./epss.ts"
import * as euvd from "./euvd.ts"
import * as exploitDb from "./exploitDb.ts"
import { problem } from "./item.ts"
import * as kev from "./kev.ts"
import * as metasploit from "./metasploit.ts"
import * as mitre from "./mitre.ts"
import * as nuclei from "./nuclei.ts"
import * as nvd from "./nvd.ts"
import * as osv from "./osv.ts"
import * as pocInGithub from "./pocInGithub.ts"
import { openReader } from "./reader.ts"

export { GENERATOR_VERSION, withEpss } from "./adp.ts"
export { countRecord } from "./counts.ts"
export { type Detected, detectSource } from "./detect.ts"
export { canonicalId, exploitUuid, isCveId, NON_CVE_RECORD_ID } from "./ids.ts"
export { MAX_RECORD_BYTES } from "./limits.ts"
export { formatOf, INGEST_FORMATS, type IngestFormat, type ItemReader, openReader } from "./reader.ts"

/**
 * Splits one file's decoded text into upstream items (the incremental reader
 * fed the whole text at once). A malformed item gives an ItemProblem
 * (position + reason) and reading goes on; nothing here throws.
 */
export function* readItems(
  source: IngestSource,
  fileName: string,
  content: string
): Iterable<UpstreamItem | ItemProblem> {
  const reader = openReader(source, fileName)
  yield* reader.push(Buffer.from(content, "utf8"))
  yield* reader.end()
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
