import { isUtf8 } from "node:buffer"
import { BACKSLASH } from "./JsonBytes.ts"
import type { TextChange } from "./TextChanges.ts"

/**
 * A JSON string literal with some of its characters replaced and every other
 * byte as the client wrote it: an escape (`\u00e9`, `\/`, a surrogate pair
 * as two `\u` escapes) outside the changes is kept as it was, not respelled.
 *
 * `literal` is the literal's bytes, quotes included; `before` its text (what
 * `JSON.parse` reads); `changes` are sorted and disjoint, in UTF-16 units of
 * `before`. A change that starts or ends inside a character written as one
 * token of two units (a 4-byte UTF-8 sequence: a surrogate pair) takes that
 * whole token, and writes the unit it does not change again. What a change
 * writes is spelled as `JSON.stringify` spells it.
 *
 * `undefined` when the literal is not UTF-8 (its text then holds U+FFFD for
 * bytes no token maps to) or the changes do not fit `before`: the caller then
 * writes the whole literal anew.
 */
export const rewriteLiteral = (
  literal: Uint8Array,
  before: string,
  changes: ReadonlyArray<TextChange>
): Uint8Array | undefined => {
  if (!fits(before, changes) || !isUtf8(literal)) return undefined
  const close = literal.length - 1
  // What to write, in order: a byte range of the literal kept, then the spelling of a change.
  const kept: Array<number> = []
  const written: Array<string> = []
  let copied = 0
  let byte = 1
  let unit = 0
  let k = 0
  while (k < changes.length) {
    let change = changes[k++]!
    // To the token holding the change's first unit (or the closing quote).
    for (;;) {
      if (byte >= close) break
      const width = widthAt(literal, byte)
      if (unit + (width >>> 3) > change.start) break
      byte += width & 7
      unit += width >>> 3
    }
    if (byte >= close && unit < change.start) return undefined
    const startByte = byte
    let text = before.slice(unit, change.start) + change.text
    // Past its last unit; a change that starts inside the token the previous one ended in joins it.
    for (;;) {
      while (unit < change.end) {
        if (byte >= close) return undefined
        const width = widthAt(literal, byte)
        byte += width & 7
        unit += width >>> 3
      }
      const next = changes[k]
      if (next === undefined || next.start >= unit) break
      text += before.slice(change.end, next.start) + next.text
      change = next
      k++
    }
    text += before.slice(change.end, unit)
    kept.push(copied, startByte)
    written.push(JSON.stringify(text).slice(1, -1))
    copied = byte
  }
  kept.push(copied, literal.length)
  // One allocation for the result, however many changes (a long text can hold thousands).
  let size = 0
  for (let i = 0; i < kept.length; i += 2) size += kept[i + 1]! - kept[i]!
  for (const text of written) size += Buffer.byteLength(text)
  const out = Buffer.allocUnsafe(size)
  const source = Buffer.from(literal.buffer, literal.byteOffset, literal.byteLength)
  let at = 0
  for (let i = 0; i < written.length; i++) {
    at += source.copy(out, at, kept[2 * i]!, kept[2 * i + 1]!)
    at += out.write(written[i]!, at)
  }
  source.copy(out, at, kept[kept.length - 2]!, kept[kept.length - 1]!)
  return out
}

const fits = (before: string, changes: ReadonlyArray<TextChange>): boolean => {
  let at = 0
  for (const change of changes) {
    if (change.start < at || change.end < change.start || change.end > before.length) return false
    at = change.end
  }
  return true
}

/**
 * The token at `i`, packed: its bytes in the low 3 bits, the UTF-16 units it
 * decodes to above them. An escape is one unit (`\uD83D` is half a pair); a
 * raw character is one unit, or two for a 4-byte sequence.
 */
const widthAt = (b: Uint8Array, i: number): number => {
  const c = b[i]!
  if (c < 0x80) return c === BACKSLASH ? (b[i + 1] === 0x75 ? 8 | 6 : 8 | 2) : 8 | 1
  if (c < 0xe0) return 8 | 2
  if (c < 0xf0) return 8 | 3
  return 16 | 4
}
