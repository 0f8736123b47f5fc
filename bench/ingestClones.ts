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

const GHSA_CHARS = "23456789cfghjmpqrvwx"
/**
 * The k-th clone's form of an identifier: a trailing number grows by "9" and k
 * on six digits (`CVE-2021-44228` → `CVE-2021-442289000007`), so clones never
 * meet each other or a real identifier (those numbers stay far below 8
 * digits); a GHSA id gets k in its last group, anything else a suffix.
 */
export const cloneId = (id: string, k: number) => {
  if (/\d$/.test(id)) return id.replace(/(\d+)$/, (n) => `${n}9${String(k).padStart(6, "0")}`)
  if (/^GHSA(-[2-9cfghjmpqrvwx]{4}){3}$/.test(id)) {
    let group = ""
    for (let n = k, i = 0; i < 4; i++, n = Math.floor(n / 20)) group += GHSA_CHARS[n % 20]
    return `${id.slice(0, -4)}${group}`
  }
  return `${id}-c${k}`
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * A record's text with each of `ids` (its own identifier, its aliases) replaced by the k-th clone's
 * form, not where one is the start of a longer number. Aliases are cloned with the record: left as
 * they were, every clone of an OSV record joined the alias group of the original's CVE, so a group
 * grew by one record per clone (170 at a million records) and a read of that CVE with it.
 */
export const cloneText = (text: string, ids: ReadonlyArray<string>, k: number) =>
  ids.reduce((t, id) => t.replace(patternOf(id), cloneId(id, k)), text)
const patterns = new Map<string, RegExp>()
const patternOf = (id: string) => {
  let pattern = patterns.get(id)
  if (pattern === undefined) patterns.set(id, pattern = new RegExp(`${escape(id)}(?![0-9])`, "g"))
  return pattern
}

/** The identifiers a record names itself by: its own, and its `aliases` and `related` (OSV's fields). */
export const namesOf = (id: string, parsed: unknown): ReadonlyArray<string> => {
  const doc = (typeof parsed === "object" && parsed !== null ? parsed : {}) as Record<string, unknown>
  const listed = [doc.aliases, doc.related].flatMap((v) => Array.isArray(v) ? v : [])
  return [id, ...listed.filter((v): v is string => typeof v === "string" && v !== id)]
}

/**
 * Writes `target` as a `--all` folder of `count` items: real records of the
 * data folder cloned under new identifiers (the identifier is replaced
 * throughout the item's text), in the sources' own proportions. Clones are
 * numbered from `firstClone`: sets with far-apart numbers share no identifier.
 */
export const generateClones = (dataDir: string, target: string, count: number, firstClone = 1) =>
  Effect.gen(function*() {
    const plan = yield* planIngest({ paths: [], all: dataDir }, detectSource)
    const originals = new Map<
      IngestSource,
      Array<{ readonly id: string; readonly ids: ReadonlyArray<string>; readonly raw: string }>
    >()
    const seen = new Set<string>()
    for (const file of plan.files) {
      if (!CLONED.includes(file.source)) continue
      for (const item of readItems(file.source, file.display, readText(file))) {
        if ("raw" in item && !/^GHSA-/.test(item.identifier) && !seen.has(`${item.source}/${item.identifier}`)) {
          seen.add(`${item.source}/${item.identifier}`)
          const list = originals.get(item.source) ?? []
          list.push({
            id: item.identifier,
            ids: namesOf(item.identifier, item.parsed),
            raw: item.raw.includes("\n") ? JSON.stringify(item.parsed) : item.raw
          })
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
        for (const { ids, raw } of list) {
          if (written >= count) break
          out.push(cloneText(raw, ids, k))
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
