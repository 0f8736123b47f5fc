/**
 * How the gateway reads sealed-block tags (docs/gateway.md, "Sealed blocks"):
 * every spelling a model reads as the same tag. A tag name in any letter case
 * (Unicode case folding, so `ſ` is `s` and the Kelvin sign `k`), whitespace
 * after `<` and `</`, attributes in any order and case, values in double,
 * single or no quotes, whitespace around `=`, other attributes beside them,
 * `/` or whitespace before `>`. A tag ends at its first `<` or `>`, inside
 * quotes too: that keeps every scan linear, and an opening cut short by `<`
 * (`<system nonce="<b>">`) still counts as an opening (see `Opening.complete`).
 */

export const SEALED_KINDS = [
  "system",
  "agent",
  "plan",
  "goal",
  "tools",
  "skills",
  "hooks",
  "attachment",
  "exploration",
  "directive",
  "diagnostics"
] as const
export type SealedKind = typeof SEALED_KINDS[number]

const KIND_NAMES = SEALED_KINDS.join("|")

// Linear: a candidate starts at a `<`, and `[^<>]*` stops at the next one, so no two attempts read
// the same attribute text. The look-ahead keeps `<systems` or `<plan-b` from being a `plan`.
const OPENING = new RegExp(`<\\s*(${KIND_NAMES})(?=[\\s/<>]|$)([^<>]*)(>?)`, "giu")
// A closing tag needs its `>`; it may carry whitespace or anything else before it (`</system x>`).
const closingSource = (kind: SealedKind) => `<\\s*/\\s*${kind}(?=[\\s/>])[^<>]*>`
// One attribute: a name, then optionally `=` and a value; an unterminated quote runs to the tag's end.
const ATTRIBUTE = /([^\s/"'=]+)(?:\s*=\s*(?:"([^"]*)"?|'([^']*)'?|([^\s"']*)))?/gu

const KINDS: ReadonlySet<string> = new Set(SEALED_KINDS)
/** The canonical kind of a tag name matched case-insensitively (`.toLowerCase()` leaves `ſ`). */
const kindOf = (name: string): SealedKind => {
  const lower = name.toLowerCase()
  return (KINDS.has(lower) ? lower : lower.replaceAll("ſ", "s")) as SealedKind
}

export interface Opening {
  readonly kind: SealedKind
  /** The first `nonce` attribute's value (`""` for a bare `nonce`). */
  readonly nonce: string
  readonly integrity: string | undefined
  /** `nonce` or `integrity` given twice with different values: no single reading, so never trusted. */
  readonly ambiguous: boolean
  /** False when the tag is cut short by a `<` or the end of the text instead of `>`. */
  readonly complete: boolean
  readonly start: number
  readonly end: number
}

/** The tag at `match` if it is a sealed-block opening (it has a `nonce` attribute), else undefined. */
const openingOf = (match: RegExpExecArray): Opening | undefined => {
  const raw = match[2]!
  if (!/nonce/i.test(raw)) return undefined
  let nonce: string | undefined
  let integrity: string | undefined
  let ambiguous = false
  // `exec` on one shared expression: `matchAll` builds a new one per call, which a text of many tags feels.
  ATTRIBUTE.lastIndex = 0
  let attribute: RegExpExecArray | null
  while ((attribute = ATTRIBUTE.exec(raw)) !== null) {
    const name = attribute[1]!.toLowerCase()
    if (name !== "nonce" && name !== "integrity") continue
    const value = attribute[2] ?? attribute[3] ?? attribute[4] ?? ""
    const seen = name === "nonce" ? nonce : integrity
    if (seen === undefined) name === "nonce" ? (nonce = value) : (integrity = value)
    else if (seen !== value) ambiguous = true
  }
  if (nonce === undefined) return undefined
  return {
    kind: kindOf(match[1]!),
    nonce,
    integrity,
    ambiguous,
    complete: match[3] === ">",
    start: match.index,
    end: match.index + match[0].length
  }
}

/** Every sealed-block opening of `text`, wherever it sits (inside a block's content too). */
export const openingsIn = (text: string): Array<Opening> => {
  const found: Array<Opening> = []
  const scan = new RegExp(OPENING.source, OPENING.flags)
  let match: RegExpExecArray | null
  while ((match = scan.exec(text)) !== null) {
    const opening = openingOf(match)
    if (opening !== undefined) found.push(opening)
  }
  return found
}

/** Whether `text` holds any sealed-block opening; most texts fail the quick test. */
export const hasOpening = (text: string): boolean => /nonce/i.test(text) && openingsIn(text).length > 0

export interface SealedBlock extends Opening {
  /** False for an opening with no closing tag of its kind after it: the block is that opening alone. */
  readonly closed: boolean
  /** UTF-16 offsets of the whole block (tags included) in its text. */
  readonly start: number
  readonly end: number
  /** Where the content starts and ends, for a rewrite that keeps both tags. */
  readonly contentStart: number
  readonly contentEnd: number
  readonly content: string
}

/**
 * The sealed blocks of one text, outermost only, in order. A block ends at
 * the first closing tag of its kind (no nesting); the scan goes on after it.
 * An opening with no such closing tag is a block of its own (tampered).
 */
export const findSealedBlocks = (text: string): Array<SealedBlock> => {
  const blocks: Array<SealedBlock> = []
  if (!/nonce/i.test(text)) return blocks
  // Once a kind has no closing tag after some offset it has none after any later one: never search again.
  const noClosingFrom = new Map<SealedKind, number>()
  const closings = new Map<SealedKind, RegExp>()
  const scan = new RegExp(OPENING.source, OPENING.flags)
  let match: RegExpExecArray | null
  while ((match = scan.exec(text)) !== null) {
    const opening = openingOf(match)
    if (opening === undefined) continue
    const { kind } = opening
    const failedFrom = noClosingFrom.get(kind)
    let closed: RegExpExecArray | null = null
    if (opening.complete && (failedFrom === undefined || failedFrom > opening.end)) {
      let closing = closings.get(kind)
      if (closing === undefined) closings.set(kind, closing = new RegExp(closingSource(kind), "giu"))
      closing.lastIndex = opening.end
      closed = closing.exec(text)
      if (closed === null) noClosingFrom.set(kind, opening.end)
    }
    if (closed === null) {
      blocks.push({ ...opening, closed: false, contentStart: opening.end, contentEnd: opening.end, content: "" })
      continue
    }
    const end = closed.index + closed[0].length
    blocks.push({
      ...opening,
      closed: true,
      end,
      contentStart: opening.end,
      contentEnd: closed.index,
      content: text.slice(opening.end, closed.index)
    })
    scan.lastIndex = end
  }
  return blocks
}

/** Whether `text` holds a closing tag of `kind` (a removal inside a kept block that made one moves its end). */
export const hasClosing = (text: string, kind: SealedKind): boolean => new RegExp(closingSource(kind), "iu").test(text)
