import type { JsonPath } from "./TextSegments.ts"

/**
 * Byte-faithful rewriting of JSON documents. A redaction must not
 * re-serialise the request: the original bytes go upstream with only the
 * changed string literals re-encoded, so key order, whitespace, number
 * spelling and every escape elsewhere stay exactly as the client sent them.
 * A policy's strip takes members and elements out the same way.
 */

export interface StringEdit {
  readonly path: JsonPath
  readonly text: string
}

/** An object member (the path ends with its key) or an array element (its index) to take out. */
export interface Removal {
  readonly path: JsonPath
  readonly remove: true
}

export type BodyEdit = StringEdit | Removal

const isRemoval = (edit: BodyEdit): edit is Removal => "remove" in edit

/** Half-open byte range of a string literal, quotes included (or of a removed member). */
interface Span {
  readonly start: number
  readonly end: number
}

interface Trie {
  readonly children: Map<string | number, Trie>
  edit: BodyEdit | undefined
  /** A removal at or below this node. */
  removes: boolean
  /** String edits at a removed place (moot: found with it). */
  moot?: Array<BodyEdit>
}

const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * Returns `bytes` with the string value at each edit's path replaced by the
 * JSON encoding of the edit's text, or `undefined` when a path does not lead
 * to a string literal (the caller then falls back to re-serialising).
 * For duplicate keys the last occurrence wins, as in `JSON.parse`.
 */
export const spliceStrings = (bytes: Uint8Array, edits: ReadonlyArray<StringEdit>): Uint8Array | undefined =>
  spliceEdits(bytes, edits)

/**
 * `spliceStrings`, and removals: each removed member or element goes with one separator beside it,
 * so what stays keeps its own bytes and the document stays valid JSON (a container whose members
 * are all removed is left empty, with the whitespace it had). A string edit inside a removed member
 * is moot. `undefined` when a path leads nowhere, or when a key on a removal's path is named twice:
 * removing what `JSON.parse` read (the last) would leave the first for a parser that keeps it.
 */
export const spliceEdits = (bytes: Uint8Array, edits: ReadonlyArray<BodyEdit>): Uint8Array | undefined => {
  if (edits.length === 0) return bytes
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const root: Trie = { children: new Map(), edit: undefined, removes: false }
  for (const edit of edits) {
    let node = root
    if (isRemoval(edit)) node.removes = true
    for (const step of edit.path) {
      let next = node.children.get(step)
      if (next === undefined) {
        next = { children: new Map(), edit: undefined, removes: false }
        node.children.set(step, next)
      }
      node = next
      if (isRemoval(edit)) node.removes = true
    }
    if (node.edit !== undefined && (isRemoval(node.edit) || isRemoval(edit))) {
      ;(node.moot ??= []).push(isRemoval(node.edit) ? edit : node.edit)
      if (isRemoval(edit)) node.edit = edit
    } else node.edit = edit
  }
  const found = new Map<BodyEdit, Span>()
  const deletions: Array<Span> = []
  const moot = new Set<BodyEdit>()
  try {
    const end = new Scanner(buffer, found, deletions, moot).value(skipWhitespace(buffer, 0), root)
    if (skipWhitespace(buffer, end) !== buffer.length) return undefined
  } catch {
    return undefined
  }
  if (found.size !== edits.length) return undefined
  const replacements: Array<readonly [Span, Uint8Array | undefined]> = deletions.map((d) => [d, undefined])
  for (const [edit, span] of found) {
    if (!moot.has(edit)) replacements.push([span, Buffer.from(JSON.stringify((edit as StringEdit).text))])
  }
  replacements.sort((a, b) => a[0].start - b[0].start)
  const parts: Array<Uint8Array> = []
  let at = 0
  for (const [span, text] of replacements) {
    parts.push(buffer.subarray(at, span.start))
    if (text !== undefined) parts.push(text)
    at = span.end
  }
  parts.push(buffer.subarray(at))
  return Buffer.concat(parts)
}

/**
 * The deletions that take out the `removed` members of one container (each member's span: its key,
 * or its value in an array, to the end of its value), each with one separator: a run of removed
 * members up to the next kept member's start, or, at the end, from the previous kept member's end;
 * all of them, from the first's start to the last's end.
 */
const memberDeletions = (members: ReadonlyArray<Span>, removed: ReadonlyArray<boolean>, out: Array<Span>) => {
  for (let a = 0; a < members.length; a++) {
    if (!removed[a]) continue
    let b = a
    while (b + 1 < members.length && removed[b + 1]) b++
    if (b + 1 < members.length) out.push({ start: members[a]!.start, end: members[b + 1]!.start })
    else if (a > 0) out.push({ start: members[a - 1]!.end, end: members[b]!.end })
    else out.push({ start: members[a]!.start, end: members[b]!.end })
    a = b
  }
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
  /**
   * A key that is one the policies read (`POLICED_KEYS`) spelled in another case (`Tools`,
   * `"Name"`, or with `ſ` or `K`). `JSON.parse` and the policies tell it apart; Go's
   * `encoding/json` (an upstream such as Ollama behind a custom provider) does not, and binds it
   * to the field the policies read under its real name.
   */
  readonly caseVariantKeys: boolean
}

/** The keys the tool, MCP-server, skill and model policies read (src/policies/DeclaredCapabilities.ts). */
const POLICED_KEYS = new Set([
  "model", "messages", "input", "content", "tools", "functions", "tool_choice", "function_call", "parallel_tool_calls",
  "mcp_servers", "tool_calls", "type", "name", "id", "function", "custom", "server_label", "server_url", "server_name",
  "mcp_server_name", "url", "container", "skills", "skill_id"
])

/** A key as Go's case-insensitive field matching sees it: ASCII lower case, and `ſ` → `s`, `K` → `k`. */
const goFolded = (key: string) => key.replace(/\u017f/g, "s").replace(/\u212a/g, "k").replace(/[A-Z]+/g, (upper) => upper.toLowerCase())

/** Whether a key literal (quotes included) with an upper-case or non-ASCII byte folds to a policed key it is not. */
const isCaseVariant = (b: Buffer, start: number, end: number): boolean => {
  const key = decodedKey(b, start, end)
  const folded = goFolded(key)
  return folded !== key && POLICED_KEYS.has(folded)
}

/**
 * One pass over a document `JSON.parse` accepted, with a stack of its own rather than recursion
 * (`JSON.parse` takes a million levels; a recursive walk fails at about ten thousand). A key is
 * hashed where it lies (FNV-1a over its bytes) and compared with the object's earlier keys, so
 * nothing is allocated per key. Bytes are read through a plain `Uint8Array` (a `Buffer`'s indexed
 * reads were half the cost), short strings with a byte loop and long ones with `indexOf`. On a
 * 2-core VM: 1.1 µs for a 4 KiB chat request, 16 µs for one with 20 tool definitions (8 KiB), whose
 * `JSON.parse` takes 24 µs; decoding each key into a `Set` took 46 µs.
 */
export const shapeOf = (bytes: Uint8Array, maxDepth: number, options: { readonly caseVariants?: boolean } = {}): DocumentShape => {
  const u = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const n = u.length
  // One entry per open container: an object's key hashes so far (with each key's span), `null` for an array.
  const open: Array<Array<number> | null> = []
  let duplicateKeys = false
  // Only the policies ask (camelCase keys, Kiro's, would each be decoded for nothing otherwise).
  const checkCase = options.caseVariants === true
  let caseVariantKeys = false
  let i = 0
  while (i < n) {
    const c = u[i]!
    if (c === QUOTE) {
      const close = closingQuote(u, b, i)
      // A string never closed: not a document JSON.parse accepted. Trusted with nothing.
      if (close === -1) return { tooDeep: true, duplicateKeys: true, caseVariantKeys: true }
      const keys = open[open.length - 1]
      // In an object, a string followed by `:` is a key (in a document JSON.parse accepted).
      if (keys && !(duplicateKeys && (caseVariantKeys || !checkCase)) && u[skipWhitespace(b, close + 1)] === 0x3a) {
        if (!duplicateKeys) {
          const hash = keyHash(u, b, i, close + 1)
          for (let k = 0; k < keys.length; k += 3) {
            if (keys[k] === hash && sameKey(b, keys[k + 1]!, keys[k + 2]!, i, close + 1)) {
              duplicateKeys = true
              break
            }
          }
          keys.push(hash, i, close + 1)
        }
        if (checkCase && !caseVariantKeys) {
          // Keys are lower-case ASCII but for a few: only those are decoded and folded.
          for (let k = i + 1; k < close; k++) {
            const c = u[k]!
            if ((c >= 0x41 && c <= 0x5a) || c >= 0x80 || c === BACKSLASH) {
              caseVariantKeys = isCaseVariant(b, i, close + 1)
              break
            }
          }
        }
      }
      i = close + 1
      continue
    }
    if (c === 0x7b || c === 0x5b) {
      open.push(c === 0x7b ? [] : null)
      if (open.length > maxDepth) return { tooDeep: true, duplicateKeys, caseVariantKeys }
    } else if (c === 0x7d || c === 0x5d) open.pop()
    i++
  }
  return { tooDeep: false, duplicateKeys, caseVariantKeys }
}

/** The index of the quote closing the string literal opened at `i`, or -1. */
const closingQuote = (u: Uint8Array, b: Buffer, i: number): number => {
  const limit = Math.min(u.length, i + 64)
  let j = i + 1
  for (; j < limit; j++) {
    const c = u[j]!
    if (c === QUOTE) return j
    if (c === BACKSLASH) j++
  }
  // Past 64 bytes (prose): a native search, each quote checked for the backslashes before it.
  for (;;) {
    const q = b.indexOf(QUOTE, j)
    if (q === -1) return -1
    let backslashes = 0
    for (let k = q - 1; k > i && u[k] === BACKSLASH; k--) backslashes++
    if (backslashes % 2 === 0) return q
    j = q + 1
  }
}

const decodedKey = (b: Buffer, start: number, end: number): string => {
  const raw = b.toString("utf8", start + 1, end - 1)
  return raw.includes("\\") ? JSON.parse(b.toString("utf8", start, end)) as string : raw
}

/** Two key literals (quotes included) that name the same key. */
const sameKey = (b: Buffer, s1: number, e1: number, s2: number, e2: number): boolean =>
  decodedKey(b, s1, e1) === decodedKey(b, s2, e2)

/**
 * FNV-1a over a key literal's bytes (`start` at its opening quote, `end` past its closing one), of
 * its unescaped UTF-8 when it has escapes (rare), so two spellings of one key hash alike.
 */
const keyHash = (u: Uint8Array, b: Buffer, start: number, end: number): number => {
  let source = u
  let from = start + 1
  let to = end - 1
  for (let k = from; k < to; k++) {
    if (u[k] === BACKSLASH) {
      source = Buffer.from(decodedKey(b, start, end))
      from = 0
      to = source.length
      break
    }
  }
  let hash = 0x811c9dc5
  for (let k = from; k < to; k++) hash = Math.imul(hash ^ source[k]!, 0x01000193)
  return hash >>> 0
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
  readonly found: Map<BodyEdit, Span>
  readonly deletions: Array<Span>
  /** Removals, and string edits inside what they remove: found, but nothing to write. */
  readonly moot: Set<BodyEdit>
  constructor(b: Buffer, found: Map<BodyEdit, Span>, deletions: Array<Span>, moot: Set<BodyEdit>) {
    this.b = b
    this.found = found
    this.deletions = deletions
    this.moot = moot
  }

  /** Scans the value at `i`; returns the index just past it. */
  value(i: number, node: Trie | undefined): number {
    const c = this.b[i]
    if (c === QUOTE) {
      const end = this.stringEnd(i)
      if (node?.edit !== undefined && !isRemoval(node.edit) && node.children.size === 0) this.found.set(node.edit, { start: i, end })
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
    const members: Array<Span> = []
    const removed: Array<boolean> = []
    const seen = node.removes ? new Set<string>() : undefined
    for (;;) {
      if (this.b[j] !== QUOTE) throw new Malformed()
      const start = j
      const keyEnd = this.stringEnd(j)
      const key = this.decodeKey(j, keyEnd)
      j = skipWhitespace(this.b, keyEnd)
      if (this.b[j] !== 0x3a) throw new Malformed()
      j = skipWhitespace(this.b, j + 1)
      const child = node.children.get(key)
      if (child !== undefined) {
        // A duplicate key: only the last occurrence is what `JSON.parse` saw.
        this.forget(child)
        if (seen !== undefined) {
          if (child.removes && seen.has(key)) throw new Malformed()
          seen.add(key)
        }
      }
      const end = this.member(j, child)
      members.push({ start, end })
      removed.push(child?.edit !== undefined && isRemoval(child.edit))
      j = skipWhitespace(this.b, end)
      if (this.b[j] === 0x2c) {
        j = skipWhitespace(this.b, j + 1)
        continue
      }
      if (this.b[j] === 0x7d) {
        this.removeMembers(members, removed)
        return j + 1
      }
      throw new Malformed()
    }
  }

  array(i: number, node: Trie): number {
    let j = skipWhitespace(this.b, i + 1)
    if (this.b[j] === 0x5d) return j + 1
    const members: Array<Span> = []
    const removed: Array<boolean> = []
    for (let index = 0;; index++) {
      const child = node.children.get(index)
      const end = this.member(j, child)
      members.push({ start: j, end })
      removed.push(child?.edit !== undefined && isRemoval(child.edit))
      j = skipWhitespace(this.b, end)
      if (this.b[j] === 0x2c) {
        j = skipWhitespace(this.b, j + 1)
        continue
      }
      if (this.b[j] === 0x5d) {
        this.removeMembers(members, removed)
        return j + 1
      }
      throw new Malformed()
    }
  }

  /** A member's value; one to be removed is skipped whole, and counted found. */
  member(j: number, child: Trie | undefined): number {
    if (child?.edit === undefined || !isRemoval(child.edit)) return this.value(j, child)
    const end = this.value(j, undefined)
    this.settle(child, { start: j, end })
    return end
  }

  /** A removed member's edits (its own, and string edits inside it, moot) are found where it was. */
  settle(node: Trie, span: Span): void {
    for (const edit of node.edit === undefined ? node.moot ?? [] : [node.edit, ...node.moot ?? []]) {
      this.found.set(edit, span)
      this.moot.add(edit)
    }
    for (const child of node.children.values()) this.settle(child, span)
  }

  removeMembers(members: ReadonlyArray<Span>, removed: ReadonlyArray<boolean>) {
    if (removed.includes(true)) memberDeletions(members, removed, this.deletions)
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
    return decodedKey(this.b, start, end)
  }

  forget(node: Trie): void {
    if (node.edit !== undefined) this.found.delete(node.edit)
    for (const child of node.children.values()) this.forget(child)
  }
}
