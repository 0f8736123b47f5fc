import type { IngestSource } from "../Upstream.ts"
import { documentItems, elementReads, isMemberMapping, memberReads, SHAPE_MEMBERS, splitOptions } from "./documents.ts"
import { type DocContext, problem, type Read } from "./item.ts"
import { hasContent, isSpace, type ItemReader, jsonSyntaxError } from "./itemReader.ts"
import { type JsonPart, JsonSplitter } from "./jsonSplit.ts"
import { CappedBytes, MAX_RECORD_BYTES, overCap } from "./limits.ts"
import { LineSplitter } from "./lines.ts"
import { ndjsonLine } from "./ndjson.ts"

/** The whole document, read as one (the reader of a document that is not split, up to the cap). */
export function* wholeDocument(source: IngestSource, fileName: string, prefix: CappedBytes): Iterable<Read> {
  if (prefix.over) return yield problem(fileName, `document not split into records: ${overCap(prefix.size)}`)
  const content = prefix.text()
  let doc: unknown
  try {
    doc = JSON.parse(content)
  } catch (e) {
    return yield problem(fileName, `malformed JSON: ${jsonSyntaxError(e)}`)
  }
  yield* documentItems(source, doc, { source, fileName, position: fileName, text: content })
}

/**
 * A JSON file: one document, or NDJSON whatever its name when its first line is
 * a JSON value and more follows (nuclei's cves.json). A document is cut into
 * records as it arrives (`JsonSplitter`: each element of the list the source
 * reads, or each member of a mapping) and each record is parsed and read on
 * its own, exactly as the source's reader reads it within the whole document.
 * A document with no such list is read whole, as before, up to the cap.
 */
export const jsonReader = (source: IngestSource, fileName: string): ItemReader => {
  const prefix = new CappedBytes()
  let mode: "sniff" | "single" | "ndjson" | "split" = "sniff"
  const modeNow = () => mode
  let lines: LineSplitter | undefined
  let splitter: JsonSplitter | undefined
  const ctx: DocContext = { source, fileName, position: fileName, text: undefined }
  // NVD indexes positions only when a response has more than one CVE: the first element waits for the second.
  let heldFirst: { readonly list: string | undefined; readonly value: unknown } | undefined
  // Mappings are recognised by their first members (as the sources' own checks do).
  let members: Array<{ key: string; value: unknown; index: number; bytes: number }> | undefined = []
  let memberBytes = 0
  let mapping: boolean | undefined
  let elements = 0
  let sawContent = false

  /** Whether the first non-blank line is a complete JSON value (then more content makes it NDJSON); false when `bytes` were not kept. */
  const sniff = (bytes: Uint8Array): boolean => {
    if (prefix.size + bytes.length > MAX_RECORD_BYTES) {
      mode = "split"
      return false
    }
    prefix.add(bytes)
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]!
      if (!sawContent) {
        sawContent = !isSpace(b)
        continue
      }
      if (b !== 0x0a) continue
      const text = prefix.text()
      const start = text.search(/\S/)
      const nl = text.indexOf("\n", start)
      mode = !isJson(text.slice(start, nl)) ? "split" : /\S/.test(text.slice(nl + 1)) ? "ndjson" : "single"
      return true
    }
    return true
  }

  function* partReads(part: JsonPart): Iterable<Read> {
    const position = `${fileName}#${part.index}`
    let value: unknown
    if (part.text !== undefined) {
      try {
        value = JSON.parse(part.text)
      } catch (e) {
        // A broken member before the shape is known: the document is read whole (and reported whole).
        if (part.kind === "member" && mapping === undefined) return void (members = undefined)
        if (part.kind === "member" && mapping !== true) return
        if (part.kind === "element") {
          elements++
          prefix.drop()
        }
        return yield problem(position, `malformed JSON: ${jsonSyntaxError(e)}`)
      }
    }
    if (part.kind === "member") {
      if (mapping === undefined && members !== undefined) {
        members.push({ key: part.key, value, index: part.index, bytes: part.text === undefined ? part.bytes : -1 })
        memberBytes += part.text === undefined ? 0 : part.text.length
        // Decided on fewer members when they are big: never more than the cap held for the decision.
        if (members.length < SHAPE_MEMBERS && memberBytes <= MAX_RECORD_BYTES) return
        return yield* decideMapping()
      }
      if (mapping !== true) return
      if (part.text === undefined) return yield problem(position, overCap(part.bytes))
      return yield* memberReads(source, part.key, value, part.index, ctx)
    }
    prefix.drop()
    elements++
    if (part.text === undefined) return yield problem(position, overCap(part.bytes))
    const nvd = (source === "nist-nvd" || source === "vulncheck-nvd") && part.list === "vulnerabilities"
    if (nvd && part.index === 0) return void (heldFirst = { list: part.list, value })
    yield* releaseHeld(false)
    yield* elementReads(source, part.list, value, part.index, ctx, false)
  }

  function* releaseHeld(single: boolean): Iterable<Read> {
    if (heldFirst === undefined) return
    const held = heldFirst
    heldFirst = undefined
    yield* elementReads(source, held.list, held.value, 0, ctx, single)
  }

  function* decideMapping(): Iterable<Read> {
    const first = members ?? []
    members = undefined
    mapping = isMemberMapping(source, Object.fromEntries(first.map((m) => [m.key, m.value])))
    if (!mapping) return
    prefix.drop()
    for (const m of first) {
      yield* m.bytes >= 0
        ? [problem(`${fileName}#${m.index}`, overCap(m.bytes))]
        : memberReads(source, m.key, m.value, m.index, ctx)
    }
  }

  function* feed(pieces: ReadonlyArray<Uint8Array>): Iterable<Read> {
    splitter ??= new JsonSplitter(splitOptions(source, MAX_RECORD_BYTES))
    for (const piece of pieces) for (const part of splitter.push(piece)) yield* partReads(part)
  }

  return {
    *push(bytes) {
      if (mode === "ndjson") {
        for (const line of lines!.push(bytes)) yield* ndjsonLine(source, fileName, line)
        return
      }
      if (mode === "split") {
        prefix.add(bytes)
        return yield* feed([bytes])
      }
      if (mode === "single" && !hasContent(bytes)) return void prefix.add(bytes)
      let replay: Array<Uint8Array>
      if (mode === "single") {
        replay = [...prefix.pieces, bytes]
        mode = "ndjson"
      } else {
        const kept = sniff(bytes)
        if (modeNow() === "sniff" || modeNow() === "single") return
        replay = kept ? [...prefix.pieces] : [...prefix.pieces, bytes]
        if (!kept) prefix.add(bytes)
      }
      if (modeNow() === "ndjson") {
        // More after a one-line JSON value: NDJSON, from the first line on.
        lines = new LineSplitter(MAX_RECORD_BYTES)
        for (const piece of replay) for (const line of lines.push(piece)) yield* ndjsonLine(source, fileName, line)
        prefix.drop()
        return
      }
      // The splitter reads the document from its first byte.
      yield* feed(replay)
    },
    *end() {
      if (mode === "ndjson") {
        for (const line of lines!.end()) yield* ndjsonLine(source, fileName, line)
        return
      }
      if (mode === "sniff" || mode === "single") return yield* wholeDocument(source, fileName, prefix)
      const s = splitter!
      for (const part of s.end()) yield* partReads(part)
      if (mapping === undefined && members !== undefined && members.length > 0 && s.failure === undefined) {
        yield* decideMapping()
      }
      yield* releaseHeld(true)
      if (elements > 0 || mapping === true) {
        if (s.failure !== undefined) yield problem(fileName, `malformed JSON after the records read: ${s.failure}`)
        return
      }
      yield* wholeDocument(source, fileName, prefix)
    }
  }
}

const isJson = (s: string): boolean => {
  try {
    JSON.parse(s)
    return true
  } catch {
    return false
  }
}
