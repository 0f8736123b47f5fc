import { parse as parseYaml } from "yaml"
import { CSV_SOURCES, type IngestSource } from "../Upstream.ts"
import { CsvRowReader } from "./csv.ts"
import { documentItems } from "./documents.ts"
import * as epss from "./epss.ts"
import * as exploitDb from "./exploitDb.ts"
import { type DocContext, problem, type Read } from "./item.ts"
import { errorMessage, hasContent, type IngestFormat, type ItemReader } from "./itemReader.ts"
import { jsonReader } from "./jsonReader.ts"
import * as kev from "./kev.ts"
import { CappedBytes, overCap } from "./limits.ts"
import * as metasploit from "./metasploit.ts"
import { ndjsonReader } from "./ndjson.ts"

export { INGEST_FORMATS, type IngestFormat, type ItemReader } from "./itemReader.ts"

export const formatOf = (fileName: string): IngestFormat => {
  const name = fileName.toLowerCase().replace(/\.gz$/, "")
  if (name.endsWith(".csv")) return "csv"
  if (name.endsWith(".yaml") || name.endsWith(".yml")) return "yaml"
  if (name.endsWith(".ndjson") || name.endsWith(".jsonl")) return "ndjson"
  return "json"
}

/** A YAML file is one document (a nuclei template), read whole up to the cap. */
const yamlReader = (source: IngestSource, fileName: string): ItemReader => {
  const prefix = new CappedBytes()
  return {
    push(bytes) {
      prefix.add(bytes)
      return []
    },
    *end() {
      if (prefix.over) return yield problem(fileName, overCap(prefix.size))
      const content = prefix.text()
      let doc: unknown
      try {
        doc = parseYaml(content, { prettyErrors: false })
      } catch (e) {
        return yield problem(fileName, `malformed YAML: ${errorMessage(e).split("\n")[0]}`)
      }
      yield* documentItems(source, doc, { source, fileName, position: fileName, text: content })
    }
  }
}

/**
 * A file of a checkout that is itself the exploit (an exploitdb `exploits/…`
 * file, a metasploit-framework `modules/….rb`): one item, its whole text, up
 * to the cap.
 */
const checkoutFileReader = (
  source: IngestSource,
  fileName: string,
  item: (ctx: DocContext, text: string) => Read
): ItemReader => {
  const whole = new CappedBytes()
  return {
    push(bytes) {
      whole.add(bytes)
      return []
    },
    *end() {
      if (whole.over) return yield problem(fileName, overCap(whole.size))
      const text = whole.text()
      yield item({ source, fileName, position: fileName, text }, text)
    }
  }
}

/** Whether a file of `source` is a checkout's exploit file rather than a data file. */
export const isCheckoutFile = (source: IngestSource, fileName: string): boolean =>
  (source === "metasploit" && metasploit.modulePathOf(fileName) !== undefined) ||
  (source === "exploit-db" && exploitDb.exploitFileOf(fileName) !== undefined)

/**
 * Exploit-DB's CSV repeats an exploit on several rows (one per tag) that the
 * reader merges per EDB id, so its rows are held to the end of the file (the
 * real file: 46k rows, 10 MB); past this much row text, further rows are
 * reported instead.
 */
const MAX_GROUPED_BYTES = 128 * 1024 * 1024

/** CSV, row by row (EPSS after its `#model_version` line; KEV and Exploit-DB exports). */
const csvReader = (source: IngestSource, fileName: string): ItemReader => {
  const ctx: DocContext = { source, fileName, position: fileName, text: undefined }
  let rows: CsvRowReader | undefined
  let header: epss.EpssHeader | undefined
  const firstLine = source === "epss" ? new CappedBytes() : undefined
  const grouped: Array<{ row: Record<string, string>; line: number }> = []
  let groupedBytes = 0

  function* rowReads(parsed: ReturnType<CsvRowReader["push"]>): Iterable<Read> {
    for (const r of parsed) {
      if ("reason" in r) {
        yield r
        continue
      }
      if (source === "epss") yield* epss.rowItems([r], header, ctx)
      else if (source === "exploit-db") {
        for (const v of Object.values(r.row)) groupedBytes += v.length
        if (groupedBytes <= MAX_GROUPED_BYTES) grouped.push(r)
        else {yield problem(
            `${fileName}:${r.line}`,
            `more than ${MAX_GROUPED_BYTES / 1024 / 1024} MiB of Exploit-DB rows in one file`
          )}
      } else if (source === "cisa-kev" || source === "vulncheck-kev") {
        yield* kev.one(r.row, { ...ctx, position: `${fileName}:${r.line}` }, undefined)
      }
    }
  }

  function* start(bytes: Uint8Array): Iterable<Read> {
    if (firstLine === undefined) {
      rows = new CsvRowReader(fileName, 0)
      return yield* rowReads(rows.push(bytes))
    }
    firstLine.add(bytes)
    if (bytes.indexOf(0x0a) < 0 && !firstLine.over) return
    const text = firstLine.over ? "" : firstLine.text()
    const nl = text.indexOf("\n")
    const first = nl < 0 ? text : text.slice(0, nl)
    header = epss.parseHeader(first.trim())
    const skip = nl >= 0 && (header !== undefined || first.startsWith("#"))
    rows = new CsvRowReader(fileName, skip ? 1 : 0)
    const all = Buffer.concat(firstLine.over ? [] : firstLine.pieces)
    yield* rowReads(rows.push(skip ? all.subarray(Buffer.byteLength(first) + 1) : all))
  }

  return {
    *push(bytes) {
      if (rows === undefined) return yield* start(bytes)
      yield* rowReads(rows.push(bytes))
    },
    *end() {
      if (rows === undefined && firstLine !== undefined) {
        const text = firstLine.over ? "" : firstLine.text()
        header = epss.parseHeader(text.trim())
        rows = new CsvRowReader(fileName, 0)
        yield* rowReads(rows.push(Buffer.from(text)))
      }
      rows ??= new CsvRowReader(fileName, 0)
      yield* rowReads(rows.end())
      if (rows.failed) return
      if (source === "exploit-db") yield* exploitDb.rowItems(grouped, ctx)
    }
  }
}

/** A file read as a format its source has not: one problem, and the bytes are not parsed at all. */
const refusedReader = (fileName: string, reason: string): ItemReader => ({
  push: () => [],
  *end() {
    yield problem(fileName, reason)
  }
})

/**
 * A reader for one file of `source`, in `format` (by default from the file's
 * name). A malformed item gives an ItemProblem (position + reason) and reading
 * goes on; nothing here throws. A file with nothing but whitespace is one
 * problem, "empty file".
 */
export const openReader = (
  source: IngestSource,
  fileName: string,
  format: IngestFormat = formatOf(fileName)
): ItemReader => {
  const inner = isCheckoutFile(source, fileName)
    ? checkoutFileReader(
      source,
      fileName,
      source === "metasploit" ? metasploit.moduleFileItem : exploitDb.exploitFileItem
    )
    : format === "csv"
    ? CSV_SOURCES.includes(source)
      ? csvReader(source, fileName)
      : refusedReader(fileName, `CSV is not a format of ${source}`)
    : format === "yaml"
    ? yamlReader(source, fileName)
    : format === "ndjson"
    ? ndjsonReader(source, fileName)
    : jsonReader(source, fileName)
  let content = false
  // A UTF-8 byte order mark (files saved by some Windows tools and exports) is dropped before any
  // reader sees the bytes: JSON.parse refused it, so such a JSON file was "malformed" as a whole.
  let head: Uint8Array | undefined = new Uint8Array(0)
  const pass = (bytes: Uint8Array) => {
    content ||= hasContent(bytes)
    return inner.push(bytes)
  }
  return {
    push(bytes) {
      if (head === undefined) return pass(bytes)
      const joined = new Uint8Array(head.length + bytes.length)
      joined.set(head)
      joined.set(bytes, head.length)
      if (joined.length < BOM.length && BOM.subarray(0, joined.length).every((b, i) => joined[i] === b)) {
        head = joined
        return []
      }
      head = undefined
      return pass(startsWithBom(joined) ? joined.subarray(BOM.length) : joined)
    },
    *end() {
      if (head !== undefined && head.length > 0 && !startsWithBom(head)) yield* pass(head)
      head = undefined
      if (!content) return yield problem(fileName, "empty file")
      yield* inner.end()
    }
  }
}

const BOM = new Uint8Array([0xef, 0xbb, 0xbf])
const startsWithBom = (bytes: Uint8Array) =>
  bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf
