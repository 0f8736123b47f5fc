import { createHash } from "node:crypto"
import type { NonceCheck } from "./NonceToken.ts"
import { findSealedBlocks, hasClosing, hasOpening, type SealedBlock } from "./SealedGrammar.ts"

export type SealedState = "verified" | "unknown" | "tampered"

/** Kinds whose content is never trusted without a hash. */
const HASH_REQUIRED: ReadonlySet<string> = new Set(["attachment", "directive", "diagnostics"])

/** What a client computes to seal a block: `sha256-` + base64 of SHA-256 over the UTF-8 content. */
export const integrityOf = (content: string): string =>
  "sha256-" + createHash("sha256").update(content, "utf8").digest("base64")

/**
 * Tampering is judged first (it needs no nonce): an opening with no closing
 * tag, `nonce` or `integrity` given twice differently, a wrong hash, or a
 * missing one where the kind requires it.
 */
export const classify = (block: SealedBlock, nonce: NonceCheck): SealedState => {
  if (!block.closed || block.ambiguous) return "tampered"
  if (block.integrity === undefined ? HASH_REQUIRED.has(block.kind) : block.integrity !== integrityOf(block.content)) {
    return "tampered"
  }
  return nonce === "valid" ? "verified" : "unknown"
}

/**
 * Verified blocks nested deeper than this are not read: their content is
 * hashed and scanned once per level, and only a holder of valid nonces can
 * nest them, so a cap bounds what one request costs. Enforce mode refuses
 * such a text rather than send content it did not read.
 */
export const MAX_VERIFIED_DEPTH = 8

export interface TextReading {
  /** The text as it goes upstream: in enforce mode, without its unknown and tampered blocks. */
  readonly text: string
  readonly verified: number
  readonly unknown: number
  readonly tampered: number
  readonly stripped: number
  /**
   * Why enforce mode cannot send `text`: a removal joined the text around it into a new opening (or
   * moved where a kept block ends), or verified blocks nest past `MAX_VERIFIED_DEPTH`.
   */
  readonly refused: "created" | "too_deep" | undefined
}

/**
 * Reads one text as a model would and, with `remove`, takes out every block
 * that is not verified (tags and content; an unclosed opening alone). The
 * content of a verified block is read the same way: a client that seals a
 * file vouches for its bytes, not for the blocks a third party wrote in it.
 * The result holds no opening but those of the verified blocks it keeps; a
 * removal that would leave one (`<sys<plan nonce="x">…</plan>tem nonce="x">`)
 * is reported, never removed again, so one linear pass per level decides.
 */
export const readSealedText = (
  text: string,
  checks: ReadonlyMap<string, NonceCheck>,
  remove: boolean,
  depth = 0
): TextReading => {
  const counts = { verified: 0, unknown: 0, tampered: 0, stripped: 0 }
  let refused: TextReading["refused"]
  const blocks = findSealedBlocks(text)
  if (blocks.length === 0) return { text, ...counts, refused }
  let out = ""
  // The text between kept blocks since the last one: the only place a removal can make an opening.
  let gap = ""
  let changedGap = false
  let from = 0
  const closeGap = () => {
    if (changedGap && hasOpening(gap)) refused ??= "created"
    out += gap
    gap = ""
    changedGap = false
  }
  for (const block of blocks) {
    const state = classify(block, checks.get(block.nonce) ?? "unknown")
    counts[state]++
    gap += text.slice(from, block.start)
    from = block.end
    if (state !== "verified") {
      if (remove) {
        counts.stripped++
        changedGap = true
      } else gap += text.slice(block.start, block.end)
      continue
    }
    let content = block.content
    if (depth >= MAX_VERIFIED_DEPTH) {
      if (hasOpening(content)) refused ??= "too_deep"
    } else {
      const inner = readSealedText(content, checks, remove, depth + 1)
      counts.verified += inner.verified
      counts.unknown += inner.unknown
      counts.tampered += inner.tampered
      counts.stripped += inner.stripped
      refused ??= inner.refused
      // A removal inside may have made a closing tag of this block's kind: the block would end there.
      if (inner.text !== content && hasClosing(inner.text, block.kind)) refused ??= "created"
      content = inner.text
    }
    closeGap()
    out += text.slice(block.start, block.contentStart) + content + text.slice(block.contentEnd, block.end)
  }
  gap += text.slice(from)
  closeGap()
  return { text: out, ...counts, refused }
}
