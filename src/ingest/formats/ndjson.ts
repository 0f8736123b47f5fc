import type { IngestSource } from "../Upstream.ts"
import { documentItems } from "./documents.ts"
import { problem, type Read } from "./item.ts"
import { type ItemReader, jsonSyntaxError } from "./itemReader.ts"
import { MAX_RECORD_BYTES, overCap } from "./limits.ts"
import { type Line, LineSplitter, lineText } from "./lines.ts"

/** Bytes a JSON value can start with (after whitespace): `{ [ " -`, digits, `t f n`. */
const JSON_START = new Uint8Array(256)
for (const c of "{[\"-0123456789tfn") JSON_START[c.charCodeAt(0)] = 1

export function* ndjsonLine(source: IngestSource, fileName: string, line: Line): Iterable<Read> {
  const position = `${fileName}:${line.number}`
  if (line.over) return yield problem(position, overCap(line.bytes))
  if (line.first === undefined) return
  // Garbage (random bytes read as NDJSON: a line every 256 bytes) is refused before it is decoded and parsed.
  if (JSON_START[line.first] === 0) {
    return yield problem(position, "malformed JSON: the line does not start with a JSON value")
  }
  const text = lineText(line).trim()
  if (text === "") return
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch (e) {
    return yield problem(position, `malformed JSON: ${jsonSyntaxError(e)}`)
  }
  yield* documentItems(source, doc, { source, fileName, position, text })
}

export const ndjsonReader = (source: IngestSource, fileName: string): ItemReader => {
  const lines = new LineSplitter(MAX_RECORD_BYTES)
  return {
    *push(bytes) {
      for (const line of lines.push(bytes)) yield* ndjsonLine(source, fileName, line)
    },
    *end() {
      for (const line of lines.end()) yield* ndjsonLine(source, fileName, line)
    }
  }
}
