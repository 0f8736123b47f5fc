import type { JsonPath } from "./TextSegments.ts"

/**
 * Byte-faithful rewriting of JSON string values. A redaction must not
 * re-serialise the request: the original bytes go upstream with only the
 * changed string literals re-encoded, so key order, whitespace, number
 * spelling and every escape elsewhere stay exactly as the client sent them.
 */

export interface StringEdit {
  readonly path: JsonPath
  readonly text: string
}

/** Half-open byte range of a string literal, quotes included. */
interface Span {
  readonly start: number
  readonly end: number
}

interface Trie {
  readonly children: Map<string | number, Trie>
  edit: StringEdit | undefined
}

const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * Returns `bytes` with the string value at each edit's path replaced by the
 * JSON encoding of the edit's text, or `undefined` when a path does not lead
 * to a string literal (the caller then falls back to re-serialising).
 * For duplicate keys the last occurrence wins, as in `JSON.parse`.
 */
export const spliceStrings = (bytes: Uint8Array, edits: ReadonlyArray<StringEdit>): Uint8Array | undefined => {
  if (edits.length === 0) return bytes
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const root: Trie = { children: new Map(), edit: undefined }
  for (const edit of edits) {
    let node = root
    for (const step of edit.path) {
      let next = node.children.get(step)
      if (next === undefined) {
        next = { children: new Map(), edit: undefined }
        node.children.set(step, next)
      }
      node = next
    }
    node.edit = edit
  }
  const found = new Map<StringEdit, Span>()
  try {
    const end = new Scanner(buffer, found).value(skipWhitespace(buffer, 0), root)
    if (skipWhitespace(buffer, end) !== buffer.length) return undefined
  } catch {
    return undefined
  }
  if (found.size !== edits.length) return undefined
  const spans = [...found].sort((a, b) => a[1].start - b[1].start)
  const parts: Array<Uint8Array> = []
  let at = 0
  for (const [edit, span] of spans) {
    parts.push(buffer.subarray(at, span.start), Buffer.from(JSON.stringify(edit.text)))
    at = span.end
  }
  parts.push(buffer.subarray(at))
  return Buffer.concat(parts)
}

/** What the guardrails need to know of a document's shape before they trust their reading of it. */
export interface DocumentShape {
  /** Nesting deeper than the limit asked for (the scan stops there). */
  readonly tooDeep: boolean
  /**
   * An object names a key twice (compared unescaped, as `JSON.parse` reads keys). `JSON.parse`
   * keeps the last occurrence, and that is what the guardrails inspect; a parser upstream that
   * kept the first would read text nobody inspected.
   */
  readonly duplicateKeys: boolean
}

/**
 * One pass over a document `JSON.parse` accepted, with a stack of its own rather than recursion
 * (`JSON.parse` takes a million levels; a recursive walk fails at about ten thousand): strings are
 * skipped with `indexOf`, and only keys are decoded.
 */
export const shapeOf = (bytes: Uint8Array, maxDepth: number): DocumentShape => {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const scanner = new Scanner(b, new Map())
  // One entry per open container: the keys seen so far in an object, `null` for an array.
  const open: Array<Set<string> | null> = []
  let duplicateKeys = false
  let i = 0
  try {
    while (i < b.length) {
      const c = b[i]!
      if (c === QUOTE) {
        const end = scanner.stringEnd(i)
        const keys = open[open.length - 1]
        // In an object, a string followed by `:` is a key (in a document JSON.parse accepted).
        if (keys && b[skipWhitespace(b, end)] === 0x3a) {
          const key = scanner.decodeKey(i, end)
          if (keys.has(key)) duplicateKeys = true
          else keys.add(key)
        }
        i = end
        continue
      }
      if (c === 0x7b || c === 0x5b) {
        open.push(c === 0x7b ? new Set() : null)
        if (open.length > maxDepth) return { tooDeep: true, duplicateKeys }
      } else if (c === 0x7d || c === 0x5d) open.pop()
      i++
    }
  } catch {
    // A string never closed: not a document JSON.parse accepted. Trusted with nothing.
    return { tooDeep: true, duplicateKeys: true }
  }
  return { tooDeep: false, duplicateKeys }
}

const skipWhitespace = (b: Buffer, i: number): number => {
  while (i < b.length) {
    const c = b[i]!
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i
    i++
  }
  return i
}

class Malformed extends Error {}

/**
 * A minimal JSON scanner: descends only into the parts of the document an
 * edit points into and skips everything else (strings are skipped with
 * `indexOf`, so large unedited values cost little).
 */
class Scanner {
  readonly b: Buffer
  readonly found: Map<StringEdit, Span>
  constructor(b: Buffer, found: Map<StringEdit, Span>) {
    this.b = b
    this.found = found
  }

  /** Scans the value at `i`; returns the index just past it. */
  value(i: number, node: Trie | undefined): number {
    const c = this.b[i]
    if (c === QUOTE) {
      const end = this.stringEnd(i)
      if (node?.edit !== undefined && node.children.size === 0) this.found.set(node.edit, { start: i, end })
      return end
    }
    if (c === 0x7b) return node === undefined ? this.skipContainer(i) : this.object(i, node)
    if (c === 0x5b) return node === undefined ? this.skipContainer(i) : this.array(i, node)
    // A number, true, false or null: runs until a delimiter.
    let j = i
    while (j < this.b.length) {
      const d = this.b[j]!
      if (d === 0x2c || d === 0x7d || d === 0x5d || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) break
      j++
    }
    if (j === i) throw new Malformed()
    return j
  }

  /** `i` is at the opening quote; returns the index after the closing one. */
  stringEnd(i: number): number {
    let j = i + 1
    for (;;) {
      const q = this.b.indexOf(QUOTE, j)
      if (q === -1) throw new Malformed()
      let backslashes = 0
      for (let k = q - 1; k > i && this.b[k] === BACKSLASH; k--) backslashes++
      if (backslashes % 2 === 0) return q + 1
      j = q + 1
    }
  }

  object(i: number, node: Trie): number {
    let j = skipWhitespace(this.b, i + 1)
    if (this.b[j] === 0x7d) return j + 1
    for (;;) {
      if (this.b[j] !== QUOTE) throw new Malformed()
      const keyEnd = this.stringEnd(j)
      const key = this.decodeKey(j, keyEnd)
      j = skipWhitespace(this.b, keyEnd)
      if (this.b[j] !== 0x3a) throw new Malformed()
      j = skipWhitespace(this.b, j + 1)
      const child = node.children.get(key)
      // A duplicate key: only the last occurrence is what `JSON.parse` saw.
      if (child !== undefined) this.forget(child)
      j = skipWhitespace(this.b, this.value(j, child))
      if (this.b[j] === 0x2c) {
        j = skipWhitespace(this.b, j + 1)
        continue
      }
      if (this.b[j] === 0x7d) return j + 1
      throw new Malformed()
    }
  }

  array(i: number, node: Trie): number {
    let j = skipWhitespace(this.b, i + 1)
    if (this.b[j] === 0x5d) return j + 1
    for (let index = 0;; index++) {
      j = skipWhitespace(this.b, this.value(j, node.children.get(index)))
      if (this.b[j] === 0x2c) {
        j = skipWhitespace(this.b, j + 1)
        continue
      }
      if (this.b[j] === 0x5d) return j + 1
      throw new Malformed()
    }
  }

  /** Skips an object or array nobody edits: bracket depth, strings skipped whole. */
  skipContainer(i: number): number {
    let depth = 0
    let j = i
    while (j < this.b.length) {
      const c = this.b[j]!
      if (c === QUOTE) {
        j = this.stringEnd(j)
        continue
      }
      if (c === 0x7b || c === 0x5b) depth++
      else if (c === 0x7d || c === 0x5d) {
        depth--
        if (depth === 0) return j + 1
      }
      j++
    }
    throw new Malformed()
  }

  decodeKey(start: number, end: number): string {
    const raw = this.b.toString("utf8", start + 1, end - 1)
    return raw.includes("\\") ? JSON.parse(this.b.toString("utf8", start, end)) as string : raw
  }

  forget(node: Trie): void {
    if (node.edit !== undefined) this.found.delete(node.edit)
    for (const child of node.children.values()) this.forget(child)
  }
}
