import type { FormatReaders } from "../../src/ingest/FormatReaders.ts"
import type { ItemProblem, UpstreamItem } from "../../src/ingest/Upstream.ts"

const counts = { references: 0, problemTypes: 0, metrics: 0, affected: 0, impacts: 0, descriptions: 1, scorecards: 0 }

/** A one-format stand-in for the real readers: NDJSON lines `{"id", "aliases"?, "fail"?}`, stored as `osv` records. */
export const StubFormats: FormatReaders = {
  *readItems(source, fileName, content): Iterable<UpstreamItem | ItemProblem> {
    const lines = content.split("\n")
    for (let n = 0; n < lines.length; n++) {
      const line = lines[n]!.trim()
      if (line === "") continue
      const position = `${fileName}:${n + 1}`
      let parsed: { id?: unknown }
      try {
        parsed = JSON.parse(line)
      } catch {
        yield { position, reason: "malformed JSON" }
        continue
      }
      if (typeof parsed.id !== "string") {
        yield { position, reason: "missing identifier" }
        continue
      }
      yield { source, identifier: parsed.id, raw: line, position, parsed }
    }
  },
  normalise(item) {
    const parsed = item.parsed as { id: string; aliases?: Array<string>; fail?: boolean }
    if (parsed.fail === true) return { position: item.position, reason: "impossible date" }
    return [{
      kind: "record",
      source: "osv",
      upstream: item.source,
      identifier: parsed.id,
      record: {
        dataType: "CVE_RECORD",
        dataVersion: "5.1",
        cveMetadata: { cveId: parsed.id },
        containers: { adp: [{ x_dataSource: "osv" }] }
      },
      aliases: parsed.aliases ?? [],
      counts,
      gcve: false
    }]
  },
  detectSource(relativePath: string) {
    const [top, source] = relativePath.split("/")
    return (top === "sources" || top === "corpus") && source === "osv"
      ? { kind: "source", source: "osv" }
      : { kind: "skip", reason: "not a source folder" }
  }
}
