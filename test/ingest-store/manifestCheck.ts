import { Effect, Stream } from "effect"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { ingest } from "../../src/ingest/Ingest.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"

export const DATA = fileURLToPath(new URL("../fixtures/data", import.meta.url))

export interface ManifestEntry {
  readonly sources: ReadonlyArray<string>
  readonly aliases: ReadonlyArray<string>
  readonly exploits?: {
    readonly exploitDb: number
    readonly exploitDbRowsInSubset: number
    readonly metasploit: number
    readonly nuclei: number
    readonly pocInGithub: boolean
  }
  readonly epss?: { readonly epss: number; readonly percentile: number }
}

export const manifest = (): Record<string, ManifestEntry> =>
  JSON.parse(readFileSync(`${DATA}/manifest.json`, "utf8")).ids

/** The manifest names vulnrichment as a source; spec 1 has none, and its records are served as `mitre`. */
export const specSource = (s: string) => s === "vulnrichment" ? "mitre" : s

export const ingestData = ingest({ paths: [], all: DATA }).pipe(Stream.runLast)

/** What the store answers for one manifest id, in the manifest's terms. */
export const observe = Effect.fn(function*(id: string) {
  const store = yield* VulnStore
  const found = yield* store.lookup(id)
  const page = yield* store.exploits(id, { limit: 1, offset: 0, includeContent: false })
  return {
    sources: [...new Set(found.records.map((r): string => r.source))].sort(),
    processing: found.records.filter((r) => r.record === null).map((r) => r.source),
    aliases: found.aliases,
    summary: page.summary,
    count: page.count,
    epss: found.records.flatMap((r) => {
      const adp =
        (r.record?.containers as { adp?: Array<{ x_epss?: { score: number; percentile: number } }> } | undefined)
          ?.adp ?? []
      return adp.flatMap((a) => a.x_epss === undefined ? [] : [a.x_epss])
    })[0]
  }
})
