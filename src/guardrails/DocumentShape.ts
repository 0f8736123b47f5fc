import { BACKSLASH, decodedKey, QUOTE, skipWhitespace } from "./JsonBytes.ts"

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

/** The keys the tool, MCP-server, skill and model policies read (src/policies/DeclaredCapabilities.ts, ModelReferences.ts), folded. */
const POLICED_KEYS = new Set([
  "model",
  "messages",
  "input",
  "content",
  "tools",
  "functions",
  "tool_choice",
  "function_call",
  "parallel_tool_calls",
  "mcp_servers",
  "tool_calls",
  "type",
  "name",
  "id",
  "function",
  "custom",
  "server_label",
  "server_url",
  "server_name",
  "mcp_server_name",
  "url",
  "container",
  "skills",
  "skill_id",
  // Fields that name a model (src/policies/ModelReferences.ts).
  "models",
  "fallbacks",
  "plugins",
  "allowed_models",
  "advisor",
  "parameters"
])

/** A key as Go's case-insensitive field matching sees it: ASCII lower case, and `ſ` → `s`, `K` → `k`. */
const goFolded = (key: string) =>
  key.replace(/\u017f/g, "s").replace(/\u212a/g, "k").replace(/[A-Z]+/g, (upper) => upper.toLowerCase())

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
export const shapeOf = (
  bytes: Uint8Array,
  maxDepth: number,
  options: { readonly caseVariants?: boolean } = {}
): DocumentShape => {
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
