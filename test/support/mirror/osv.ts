import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import type { FeedMirror } from "../feedMirror.ts"
import { zipOf } from "./zipWriter.ts"

/**
 * OSV's bucket on the feed mirror, under `/osv`: per ecosystem `all.zip`
 * (`<ID>.json` entries), `modified_id.csv` (`<modified>,<ID>` lines, newest
 * first, no header) and `<ID>.json`, as https://google.github.io/osv.dev/data/
 * describes them. Records are the recorded real ones of test/fixtures/data/sources/osv.
 */
const DIR = fileURLToPath(new URL("../../fixtures/data/sources/osv/", import.meta.url))

export interface OsvRecord {
  readonly id: string
  readonly modified: string
  readonly text: Buffer
}

const ECOSYSTEM_OF: Record<string, string> = { GO: "Go", PYSEC: "PyPI", RUSTSEC: "crates.io" }

/** The recorded records by ecosystem (Go, PyPI, crates.io). */
export const osvRecords = (): Record<string, Array<OsvRecord>> => {
  const out: Record<string, Array<OsvRecord>> = {}
  for (const f of readdirSync(DIR).filter((f) => f.endsWith(".json")).sort()) {
    const text = readFileSync(DIR + f)
    const doc = JSON.parse(text.toString("utf8")) as { id: string; modified: string }
    const ecosystem = ECOSYSTEM_OF[doc.id.split("-")[0]!]!
    ;(out[ecosystem] ??= []).push({ id: doc.id, modified: doc.modified, text })
  }
  return out
}

/** Publishes one ecosystem's folder as the bucket has it after an export. */
export const publishEcosystem = (mirror: FeedMirror, ecosystem: string, records: ReadonlyArray<OsvRecord>) => {
  const folder = `/osv/${encodeURIComponent(ecosystem)}`
  mirror.publish(
    `${folder}/all.zip`,
    zipOf(records.map((r) => ({ name: `${r.id}.json`, data: r.text }))),
    "application/zip"
  )
  const lines = [...records].sort((a, b) => a.modified < b.modified ? 1 : -1).map((r) => `${r.modified},${r.id}\n`)
  mirror.publish(`${folder}/modified_id.csv`, lines.join(""), "text/csv")
  for (const r of records) mirror.publish(`${folder}/${encodeURIComponent(r.id)}.json`, r.text, "application/json")
  return folder
}
