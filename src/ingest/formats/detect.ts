import { INGEST_SOURCES, type IngestSource } from "../Upstream.ts"
import { exploitFileOf } from "./exploitDb.ts"
import { modulePathOf } from "./metasploit.ts"

export type Detected =
  | { readonly kind: "source"; readonly source: IngestSource }
  | { readonly kind: "skip"; readonly reason: string }

/** Files of a `shared/data`-like tree that are not upstream data, or duplicate another file's items. */
const SKIPPED: ReadonlyArray<readonly [RegExp, string]> = [
  [/^(sources|corpus)\/sploitscan\//, "sploitscan is a cross-check aggregation, not an upstream of the service"],
  [/^sources\/osv\/yaml\//, "PyPA YAML originals of the JSON conversions beside them (same items)"],
  [
    /^corpus\/nuclei\/cves\.cvedb-yml-vulnerability\.json$/,
    "older mirror of nuclei's cves.json with CI paths; superseded by cves.json"
  ],
  [/^corpus\/cisa-kev\/.*\.csv$/, "CSV export of the KEV catalog JSON beside it (same entries)"],
  [/^corpus\/exploit-db\/files_shellcodes\.csv$/, "shellcodes name no CVE and share the EDB id space with exploits"]
]

const DATA_FILE = /\.(json|ndjson|jsonl|csv|ya?ml)(\.gz)?$/i

/**
 * For `ingest --all DIR`: the source of a path relative to DIR
 * (`sources/<source>/…`, `corpus/<source>/…`, or `<source>/…`), or why it is skipped.
 */
export const detectSource = (relativePath: string): Detected => {
  const path = relativePath.replaceAll("\\", "/").replace(/^\.\//, "")
  for (const [pattern, reason] of SKIPPED) if (pattern.test(path)) return { kind: "skip", reason }
  const parts = path.split("/")
  const folder = parts[0] === "sources" || parts[0] === "corpus" ? parts[1] : parts[0]
  if (parts.length < 2 || folder === undefined) return { kind: "skip", reason: "not inside a source folder" }
  if (folder === "schemas" || parts[0] === "schemas") return { kind: "skip", reason: "JSON schemas, not data" }
  if (!(INGEST_SOURCES as ReadonlyArray<string>).includes(folder)) {
    return { kind: "skip", reason: `folder ${folder} is not a known source` }
  }
  // A checkout's exploit files (exploitdb `exploits/…`, metasploit-framework `modules/….rb`) are data too.
  if (folder === "metasploit" && modulePathOf(path) !== undefined) return { kind: "source", source: "metasploit" }
  if (folder === "exploit-db" && exploitFileOf(path) !== undefined) return { kind: "source", source: "exploit-db" }
  if (!DATA_FILE.test(path)) {
    return { kind: "skip", reason: "not a data file (json, ndjson, csv, yaml, optionally .gz)" }
  }
  return { kind: "source", source: folder as IngestSource }
}
