import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { gunzipSync } from "node:zlib"
import { detectSource, isItemProblem, normalise, readItems } from "../../src/ingest/formats/index.ts"
import type { IngestSource, ItemProblem, Normalised, UpstreamItem } from "../../src/ingest/Upstream.ts"

/** Reads a `shared/data`-like tree the way `ingest --all` does, without a database. */

export const FIXTURES = new URL("../fixtures/data/", import.meta.url).pathname

/** Every file under `dir`, in name order. */
export const walk = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e) => e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)])

export const decode = (path: string): string => {
  const bytes = readFileSync(path)
  return (path.endsWith(".gz") ? gunzipSync(bytes) : bytes).toString("utf8")
}

export interface Outcome {
  readonly file: string
  readonly source: IngestSource
  readonly item: UpstreamItem
  readonly result: ReadonlyArray<Normalised> | ItemProblem
}

export const ingestTree = (root: string) => {
  const outcomes: Array<Outcome> = []
  const problems: Array<ItemProblem> = []
  const skipped: Array<{ file: string; reason: string }> = []
  for (const path of walk(root)) {
    const rel = relative(root, path)
    const d = detectSource(rel)
    if (d.kind === "skip") {
      skipped.push({ file: rel, reason: d.reason })
      continue
    }
    for (const r of readItems(d.source, rel, decode(path))) {
      if ("raw" in r) outcomes.push({ file: rel, source: d.source, item: r, result: normalise(r) })
      else problems.push(r)
    }
  }
  return { outcomes, problems, skipped }
}

export const records = (outcomes: ReadonlyArray<Outcome>) =>
  outcomes.flatMap((o) => isItemProblem(o.result) ? [] : o.result.flatMap((n) => n.kind === "record" ? [n] : []))

export const exploits = (outcomes: ReadonlyArray<Outcome>) =>
  outcomes.flatMap((o) =>
    isItemProblem(o.result) ? [] : o.result.flatMap((n) => n.kind === "exploits" ? n.exploits : [])
  )
