import { BACKSLASH, decodedKey, QUOTE, skipWhitespace } from "./JsonBytes.ts"
import type { JsonPath } from "./JsonPath.ts"
import type { TextChange } from "./TextChanges.ts"

/**
 * Finding where a document's edits land: a scanner that descends only into
 * what an edit points into, and the spans the splice then rewrites or takes out.
 */

/** A string value to rewrite: its new text and, when the writer knows them, the characters it changed. */
export interface StringEdit {
  readonly path: JsonPath
  readonly text: string
  /**
   * The spans of the literal's text (`JSON.parse`'s reading) that `text` replaces, sorted and
   * disjoint: exactly these are written anew. Without them the splice finds them itself.
   */
  readonly changes?: ReadonlyArray<TextChange> | undefined
}

/** An object member (the path ends with its key) or an array element (its index) to take out. */
export interface Removal {
  readonly path: JsonPath
  readonly remove: true
}

export type BodyEdit = StringEdit | Removal

export const isRemoval = (edit: BodyEdit): edit is Removal => "remove" in edit

/** Half-open byte range of a string literal, quotes included (or of a removed member). */
export interface Span {
  readonly start: number
  readonly end: number
}

export interface Trie {
  readonly children: Map<string | number, Trie>
  edit: BodyEdit | undefined
  /** A removal at or below this node. */
  removes: boolean
  /** String edits at a removed place (moot: found with it). */
  moot?: Array<BodyEdit>
}

/** The edits as a tree of their paths. */
export const trieOf = (edits: ReadonlyArray<BodyEdit>): Trie => {
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
  return root
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

class Malformed extends Error {}

/**
 * A minimal JSON scanner: descends only into the parts of the document an
 * edit points into and skips everything else (strings are skipped with
 * `indexOf`, so large unedited values cost little).
 */
export class Scanner {
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
      if (node?.edit !== undefined && !isRemoval(node.edit) && node.children.size === 0) {
        this.found.set(node.edit, { start: i, end })
      }
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
