import { Effect } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { detectSource, readItems } from "../src/ingest/formats/index.ts"
import { planIngest } from "../src/ingest/SourceFiles.ts"
import type { IngestSource } from "../src/ingest/Upstream.ts"
import { readText } from "./corpusText.ts"

/** Sources whose items are self-contained JSON documents, so a clone is one NDJSON line. */
const CLONED: ReadonlyArray<IngestSource> = [
  "vulnrichment",
  "mitre",
  "osv",
  "cisa-kev",
  "euvd",
  "nist-nvd",
  "metasploit"
]

/**
 * `CVE-2021-44228` → `CVE-2021-442289007`: the trailing number grows by "9"
 * and the clone number, so every identifier form stays valid and no clone can
 * meet a real identifier (those numbers stay far below 8 digits).
 */
const cloneId = (id: string, k: number) => id.replace(/(\d+)$/, (n) => `${n}9${String(k).padStart(3, "0")}`)

/**
 * Writes `target` as a `--all` folder of `count` items: real records of the
 * data folder cloned under new identifiers (the identifier is replaced
 * throughout the item's text), in the sources' own proportions. Clones are
 * numbered from `firstClone`: sets with far-apart numbers share no identifier.
 */
export const generateClones = (dataDir: string, target: string, count: number, firstClone = 1) =>
  Effect.gen(function*() {
    const plan = yield* planIngest({ paths: [], all: dataDir }, detectSource)
    const originals = new Map<IngestSource, Array<{ readonly id: string; readonly raw: string }>>()
    const seen = new Set<string>()
    for (const file of plan.files) {
      if (!CLONED.includes(file.source)) continue
      for (const item of readItems(file.source, file.display, readText(file))) {
        if ("raw" in item && !/^GHSA-/.test(item.identifier) && !seen.has(`${item.source}/${item.identifier}`)) {
          seen.add(`${item.source}/${item.identifier}`)
          const list = originals.get(item.source) ?? []
          list.push({ id: item.identifier, raw: item.raw.includes("\n") ? JSON.stringify(item.parsed) : item.raw })
          originals.set(item.source, list)
        }
      }
    }
    const total = [...originals.values()].reduce((n, l) => n + l.length, 0)
    let written = 0
    const files: Array<string> = []
    for (let k = firstClone; written < count; k++) {
      for (const [source, list] of originals) {
        const out: Array<string> = []
        for (const { id, raw } of list) {
          if (written >= count) break
          out.push(raw.replaceAll(id, cloneId(id, k)))
          written++
        }
        if (out.length === 0) continue
        mkdirSync(join(target, "corpus", source), { recursive: true })
        const file = join(target, "corpus", source, `clone-${String(k).padStart(3, "0")}.ndjson`)
        writeFileSync(file, `${out.join("\n")}\n`)
        files.push(file)
      }
    }
    // File names, not the lines: holding 300k texts on the heap during the measured run would tax its GC.
    return { files, count: written, originals: total }
  })
