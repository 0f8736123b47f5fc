import { type BodyEdit, isRemoval, Scanner, type Span, type StringEdit, trieOf } from "./EditScanner.ts"
import { skipWhitespace } from "./JsonBytes.ts"
import { rewriteLiteral } from "./LiteralRewrite.ts"
import { changesBetween } from "./TextChanges.ts"

/**
 * Byte-faithful rewriting of JSON documents. A redaction must not
 * re-serialise the request: the original bytes go upstream with only the
 * changed characters of the changed string literals re-encoded, so key order,
 * whitespace, number spelling and every escape elsewhere, in those literals
 * too, stay exactly as the client sent them. A policy's strip takes members
 * and elements out the same way.
 */

export { type DocumentShape, shapeOf } from "./DocumentShape.ts"
export type { BodyEdit, Removal, StringEdit } from "./EditScanner.ts"
export type { TextChange } from "./TextChanges.ts"

/**
 * Returns `bytes` with the string value at each edit's path rewritten to the
 * edit's text, or `undefined` when a path does not lead to a string literal
 * (the caller then falls back to re-serialising).
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
 *
 * Within an edited literal only the characters that changed are written anew: those the edit's
 * `changes` name, or else those `changesBetween` finds between the literal's text and the new one.
 */
export const spliceEdits = (bytes: Uint8Array, edits: ReadonlyArray<BodyEdit>): Uint8Array | undefined => {
  if (edits.length === 0) return bytes
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const found = new Map<BodyEdit, Span>()
  const deletions: Array<Span> = []
  const moot = new Set<BodyEdit>()
  try {
    const end = new Scanner(buffer, found, deletions, moot).value(skipWhitespace(buffer, 0), trieOf(edits))
    if (skipWhitespace(buffer, end) !== buffer.length) return undefined
  } catch {
    return undefined
  }
  if (found.size !== edits.length) return undefined
  const replacements: Array<readonly [Span, Uint8Array | undefined]> = deletions.map((d) => [d, undefined])
  for (const [edit, span] of found) {
    if (moot.has(edit) || isRemoval(edit)) continue
    const literal = buffer.subarray(span.start, span.end)
    const rewritten = rewrittenLiteral(literal, edit)
    if (rewritten !== literal) replacements.push([span, rewritten])
  }
  if (replacements.length === 0) return bytes
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

/** The literal spelling `edit.text`, keeping the client's bytes wherever a character did not change. */
const rewrittenLiteral = (literal: Buffer, edit: StringEdit): Uint8Array => {
  let before: unknown
  try {
    before = JSON.parse(literal.toString("utf8"))
  } catch {
    before = undefined
  }
  if (typeof before !== "string") return Buffer.from(JSON.stringify(edit.text))
  const changes = edit.changes ?? changesBetween(before, edit.text)
  if (changes.length === 0) return literal
  return rewriteLiteral(literal, before, changes) ?? Buffer.from(JSON.stringify(edit.text))
}
