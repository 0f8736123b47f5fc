import { Effect } from "effect"
import type { Surface } from "../../schema/GatewayRequest.ts"
import { PolicyRefusal } from "../../schema/PolicyRefusal.ts"
import type { JsonPath } from "../guardrails/JsonPath.ts"
import { readSegments } from "../guardrails/TextSegments.ts"
import type { NonceCheck } from "./NonceToken.ts"
import { openingsIn } from "./SealedGrammar.ts"
import { readSealedText } from "./SealedRemoval.ts"
import { splitOpenings } from "./SplitTags.ts"

/**
 * Sealed blocks (spec 2, States and transitions): `<kind nonce="…"
 * integrity="…">content</kind>` inside any text segment of a request, read
 * in every spelling a model reads the same way (`SealedGrammar.ts`).
 * `integrity` is `sha256-` + standard base64 (padded) of SHA-256 over the
 * content's exact UTF-8 bytes between the tags (the SRI convention).
 */

export { findSealedBlocks, SEALED_KINDS, type SealedBlock, type SealedKind } from "./SealedGrammar.ts"
export { classify, integrityOf, type SealedState } from "./SealedRemoval.ts"
export type NonceMode = "observe" | "enforce"

/** Sealed-block counts for `X-Gateway-Firewall-Nonce`; present only when the request carried sealed blocks. */
export interface NonceSummary {
  readonly mode: "observe" | "enforce"
  readonly verified: number
  readonly unknown: number
  readonly tampered: number
  readonly stripped: number
}

type Json = Record<string, unknown>

const setAt = (root: Json, path: JsonPath, value: string) => {
  let node: any = root
  for (let i = 0; i < path.length - 1; i++) node = node[path[i]!]
  node[path[path.length - 1]!] = value
}

export interface SealedBlockOutcome {
  /** Undefined when the request carried no sealed block (no `X-Gateway-Firewall-Nonce`). */
  readonly summary: NonceSummary | undefined
  /** In enforce mode, the body without its unknown and tampered blocks; undefined when nothing was removed. */
  readonly body: Json | undefined
  /** The rewritten strings of `body`, for a byte-faithful splice of the original bytes. */
  readonly edits: ReadonlyArray<{ readonly path: JsonPath; readonly text: string }>
  /**
   * In enforce mode, the unknown and tampered blocks that could not be removed: those in an object
   * key (a property name in a tool schema), which no string edit renames.
   */
  readonly unremovable: number
  /**
   * In enforce mode, why the request cannot be sent: a block enforce mode cannot remove (in an
   * object key), a removal that would make a new opening, or verified blocks nested too deep. The
   * firewall refuses rather than send a block enforce mode is there to remove.
   */
  readonly refusal: PolicyRefusal | undefined
}

const none: SealedBlockOutcome = { summary: undefined, body: undefined, edits: [], unremovable: 0, refusal: undefined }

const REFUSAL_DETAIL = {
  key: "in nonce enforce mode, an unknown or tampered sealed block sits in an object key (a property name), " +
    "which the gateway cannot remove; send the request without it",
  created: "in nonce enforce mode, removing an unknown or tampered sealed block would join the text around it " +
    "into a new sealed-block tag; send the request without it",
  too_deep:
    "in nonce enforce mode, verified sealed blocks nest deeper than the gateway reads; send them less deeply nested",
  split: "in nonce enforce mode, a sealed-block tag is cut across neighbouring text parts, which the provider joins " +
    "and the gateway cannot remove; send the request without it",
  encode: "in nonce enforce mode, a textual document without its unknown or tampered sealed blocks cannot be written " +
    "back in its character set; send the request without them"
} as const

// Made per request: the firewall attaches the request's verdict to the refusal it is given.
const refusalOf = (reason: keyof typeof REFUSAL_DETAIL) =>
  new PolicyRefusal({ refusal: "request_uninspectable", detail: REFUSAL_DETAIL[reason] })

// A textual payload the walk could not decode (an unread character set, invalid base64, over the
// size cap) may hide a block the provider decodes: enforce mode does not send what it did not read.
const undecodableRefusal = (what: string) =>
  new PolicyRefusal({
    refusal: "request_uninspectable",
    detail: `in nonce enforce mode, the request carries ${what}, which the gateway cannot read for sealed blocks`
  })

// A body can carry a block only if its bytes spell `nonce` (in any letter case: attribute names
// are read so), hold a JSON `\u` escape, which can spell anything, or carry a payload the provider
// decodes, whose encoding hides the word (`EncodedText.ts`). Such payloads sit only at documented
// positions (`OpaquePositions.ts`): a `"base64"` source's `data`, a `file_data`, an `image_url`, so
// their exact bytes are the markers (`64"`, `_data"`, `_url"`: searches that start at a rare byte
// cost a few hundredths of a millisecond per MB; a false match only costs the walk). The exact
// spellings are found without decoding; only a body with none pays for a case-blind scan, in slices
// small enough to stay out of the old generation (one string of the whole body cost several times
// as much).
const MARKERS = ["nonce", "\\u", "64\"", "_data\"", "_url\""].map((marker) => Buffer.from(marker))
const SLICE = 32 * 1024
const mayHoldBlock = (raw: Buffer): boolean => {
  for (const marker of MARKERS) if (raw.includes(marker)) return true
  // Consecutive slices overlap by 4 bytes, so a spelling across a boundary is whole in one of them.
  for (let start = 0; start < raw.length; start += SLICE) {
    if (/[Nn][Oo][Nn][Cc][Ee]/.test(raw.toString("latin1", start, Math.min(raw.length, start + SLICE + 4)))) return true
  }
  return false
}

/**
 * Finds, classifies and (in enforce mode) removes sealed blocks in the text
 * segments the guardrails inspect (`segmentsOf`: system prompts, message
 * text, tool results, tool definitions; never tool-call arguments). `checkAll`
 * verifies every distinct nonce of the request in one call, those of blocks
 * nested in others included.
 */
export const inspectSealedBlocks = <E>(options: {
  readonly surface: Surface
  readonly raw: Uint8Array
  readonly body: Json
  readonly mode: NonceMode
  readonly checkAll: (nonces: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, NonceCheck>, E>
}): Effect.Effect<SealedBlockOutcome, E> => {
  const raw = Buffer.isBuffer(options.raw)
    ? options.raw
    : Buffer.from(options.raw.buffer, options.raw.byteOffset, options.raw.length)
  if (!mayHoldBlock(raw)) return Effect.succeed(none)
  // The guardrails' own segments (same walker, same paths), decoded documents included: a block sits
  // wherever a rule would read text, and the paths are what the enforce-mode rewrite below and
  // `spliceStrings` edit (a decoded text goes back through its segment's `encode`).
  const read = readSegments(options.surface, options.body)
  if (options.mode === "enforce" && read.undecodable !== undefined) {
    return Effect.succeed({ ...none, refusal: undecodableRefusal(read.undecodable) })
  }
  const segments = read.segments
  const found = segments
    .map((segment) => ({ segment, openings: openingsIn(segment.text) }))
    .filter(({ openings }) => openings.length > 0)
  // Tags cut across neighbouring parts that the provider joins: tampered, and no edit removes them.
  const split = splitOpenings(segments)
  if (found.length === 0 && split === 0) return Effect.succeed(none)
  const nonces = [...new Set(found.flatMap(({ openings }) => openings.map((opening) => opening.nonce)))]
  return Effect.map(options.checkAll(nonces), (checks) => {
    const counts = { verified: 0, unknown: 0, tampered: split }
    let stripped = 0
    let unremovable = 0
    let refusal: keyof typeof REFUSAL_DETAIL | undefined = options.mode === "enforce" && split > 0 ? "split" : undefined
    const rewrites: Array<{ readonly path: JsonPath; readonly text: string }> = []
    for (const { segment } of found) {
      // An object key (a property name in a tool schema) is counted but cannot be rewritten: its path
      // is that of its value, and a string edit renames no key. It stays (`stripped` says so), and in
      // enforce mode `unremovable` counts it.
      const removable = options.mode === "enforce" && segment.key !== true
      const reading = readSealedText(segment.text, checks, removable)
      counts.verified += reading.verified
      counts.unknown += reading.unknown
      counts.tampered += reading.tampered
      stripped += reading.stripped
      if (options.mode !== "enforce") continue
      if (!removable) unremovable += reading.unknown + reading.tampered
      refusal ??= reading.refused ?? (unremovable > 0 ? "key" : undefined)
      if (reading.text === segment.text) continue
      const text = segment.encode === undefined ? reading.text : segment.encode(reading.text)
      if (text === undefined) refusal ??= "encode"
      else rewrites.push({ path: segment.path, text })
    }
    let body: Json | undefined
    if (rewrites.length > 0) {
      // Copy only when something is removed; the parsed request stays as received.
      body = structuredClone(options.body)
      for (const rewrite of rewrites) setAt(body, rewrite.path, rewrite.text)
    }
    return {
      summary: { mode: options.mode, ...counts, stripped },
      body,
      edits: rewrites,
      unremovable,
      refusal: refusal === undefined ? undefined : refusalOf(refusal)
    }
  })
}

/** `X-Gateway-Nonce-Mode: enforce` selects enforce mode; anything else observes. */
export const nonceModeOf = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
): NonceMode => {
  const value = headers["x-gateway-nonce-mode"]
  return typeof value === "string" && value.trim().toLowerCase() === "enforce" ? "enforce" : "observe"
}
