import { readFileSync } from "node:fs"
import { gunzipSync } from "node:zlib"
import type { SourceFile } from "../src/ingest/SourceFiles.ts"

/** A local file's whole text, gunzipped when it is `.gz`: the benchmarks rewrite a corpus; ingestion streams instead. */
export const readText = (file: SourceFile): string => {
  if (file.path === undefined) throw new Error("standard input has no whole text")
  const bytes = readFileSync(file.path)
  return (file.path.endsWith(".gz") ? gunzipSync(bytes) : bytes).toString("utf8")
}
