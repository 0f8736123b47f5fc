import type { IngestSource } from "../Upstream.ts"
import { documentItems, elementReads, isMemberMapping, memberReads, SHAPE_MEMBERS, splitOptions } from "./documents.ts"
import { type DocContext, problem, type Read } from "./item.ts"
import { hasContent, isSpace, type ItemReader, jsonSyntaxError } from "./itemReader.ts"
import { type JsonPart, type JsonSplitOptions, JsonSplitter } from "./jsonSplit.ts"
import { CappedBytes, MAX_RECORD_BYTES, overCap } from "./limits.ts"
import { LineSplitter } from "./lines.ts"
import { ndjsonLine } from "./ndjson.ts"

/**
 * The whole document, read as one (the reader of a document that is not split, up to the cap).
 * `parsed` is the document when the caller has already parsed its text.
 */
export function* wholeDocument(
  source: IngestSource,
  fileName: string,
  prefix: CappedBytes,
  parsed?: { readonly text: string; readonly value: unknown }
): Iterable<Read> {
  if (prefix.over) return yield problem(fileName, `document not split into records: ${overCap(prefix.size)}`)
  const content = parsed?.text ?? prefix.text()
  let doc: unknown
  if (parsed !== undefined) doc = parsed.value
  else {
    try {
      doc = JSON.parse(content)
    } catch (e) {
      return yield problem(fileName, `malformed JSON: ${jsonSyntaxError(e)}`)
    }
  }
  yield* documentItems(source, doc, { source, fileName, position: fileName, text: content })
}

/**
 * Documents up to this size are held before the splitter sees them: one that turns out to have
 * no list to cut (a CVE List or OSV record file, pretty-printed) is then parsed once, without the
 * byte-by-byte scan that found nothing to cut before it was parsed whole anyway.
 */
const DEFER_SPLIT_BYTES = 1024 * 1024

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
  /** The first line parsed while sniffing: the whole document when nothing but blanks follow it. */
  let sniffed: { readonly text: string; readonly value: unknown } | undefined
  /** In split mode, the bytes are held in `prefix` and not yet fed to the splitter. */
  let deferred = false
  const options = splitOptions(source, MAX_RECORD_BYTES)

  /** Whether the first non-blank line is a complete JSON value (then more content makes it NDJSON); false when `bytes` were not kept. */
  const sniff = (bytes: Uint8Array): boolean => {
    if (prefix.size + bytes.length > MAX_RECORD_BYTES) {
      mode = "split"
      return false
    }
    prefix.add(bytes)
    let i = 0
    if (!sawContent) {
      while (i < bytes.length && isSpace(bytes[i]!)) i++
      if (i === bytes.length) return true
      sawContent = true
      i++
    }
    // The newline is found natively: a one-line API page is megabytes with no newline at all.
    if (bytes.indexOf(0x0a, i) < 0) return true
    const text = prefix.text()
    const start = text.search(/\S/)
    const nl = text.indexOf("\n", start)
    const line = parsedLine(text.slice(start, nl))
    if (line === undefined) mode = "split"
    else if (/\S/.test(text.slice(nl + 1))) mode = "ndjson"
    else {
      mode = "single"
      sniffed = line
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
    splitter ??= new JsonSplitter(options)
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
        if (!deferred) return yield* feed([bytes])
        if (prefix.size <= DEFER_SPLIT_BYTES) return
        // Too big to hold any longer: cut as it arrives, from its first byte.
        deferred = false
        return yield* feed(prefix.pieces)
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
      if (!options.members && !prefix.over && prefix.size <= DEFER_SPLIT_BYTES) {
        deferred = true
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
      if (mode === "single" && sniffed !== undefined) {
        return yield* wholeDocument(source, fileName, prefix, { text: prefix.text(), value: sniffed.value })
      }
      if (mode === "sniff" || mode === "single") return yield* wholeDocument(source, fileName, prefix)
      if (deferred) {
        deferred = false
        const whole = unsplit(options, prefix.text())
        if (whole !== undefined) return yield* wholeDocument(source, fileName, prefix, whole)
        yield* feed(prefix.pieces)
      }
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

/**
 * A held document parsed whole, when the splitter would cut nothing out of it (then reading it
 * whole is what the split path ends with too); undefined when it may hold a list to cut, or does
 * not parse (the split path then reports where it breaks, as before).
 */
const unsplit = (
  options: JsonSplitOptions,
  text: string
): { readonly text: string; readonly value: unknown } | undefined => {
  const first = text.search(/\S/)
  if (first < 0 || (options.topArray && text[first] === "[")) return undefined
  if (options.lists.some((list) => text.includes(`"${list}"`))) return undefined
  const parsed = parseJson(text)
  if (parsed === undefined) return undefined
  const value = parsed.value
  // A list named with escapes in its key (`"rec\u006frds"`) is cut by the splitter all the same.
  if (isObject(value) && options.lists.some((list) => isArray(value, list))) return undefined
  return { text, value }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
const isArray = (value: Record<string, unknown>, key: string) => Object.hasOwn(value, key) && Array.isArray(value[key])

const parseJson = (text: string): { readonly value: unknown } | undefined => {
  try {
    return { value: JSON.parse(text) }
  } catch {
    return undefined
  }
}

/**
 * A line parsed as JSON, or undefined when it is not a JSON value. A pretty-printed document's
 * first line (`{`) is refused without a parse: each refusal was a thrown SyntaxError, whose
 * message and stack cost more than many small records' reading.
 */
const parsedLine = (line: string): { readonly text: string; readonly value: unknown } | undefined => {
  const end = line.trimEnd()
  const open = end[0]
  const close = end[end.length - 1]
  if ((open === "{" && close !== "}") || (open === "[" && close !== "]")) return undefined
  const parsed = parseJson(line)
  return parsed === undefined ? undefined : { text: line, value: parsed.value }
}
