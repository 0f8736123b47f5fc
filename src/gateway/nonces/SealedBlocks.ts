import { createHash } from "node:crypto"
import { Effect } from "effect"
import type { Surface } from "../../../schema/GatewayRequest.ts"
import { type JsonPath, segmentsOf } from "../../guardrails/TextSegments.ts"
import type { NonceSummary } from "../pipeline/Verdict.ts"
import type { NonceCheck } from "./NonceToken.ts"

/**
 * Sealed blocks (spec 2, States and transitions): `<kind nonce="…"
 * integrity="…">content</kind>` inside any text segment of a request.
 * `integrity` is `sha256-` + standard base64 (padded) of SHA-256 over the
 * content's exact UTF-8 bytes between the tags (the SRI convention).
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

/** Kinds whose content is never trusted without a hash. */
const HASH_REQUIRED: ReadonlySet<string> = new Set(["attachment", "directive", "diagnostics"])

export type SealedState = "verified" | "unknown" | "tampered"
export type NonceMode = "observe" | "enforce"

/** What a client computes to seal a block: `sha256-` + base64 of SHA-256 over the UTF-8 content. */
export const integrityOf = (content: string): string =>
  "sha256-" + createHash("sha256").update(content, "utf8").digest("base64")

export interface SealedBlock {
  readonly kind: SealedKind
  readonly nonce: string
  readonly integrity: string | undefined
  /** UTF-16 offsets of the whole block (tags included) in its segment. */
  readonly start: number
  readonly end: number
  readonly content: string
}

// Linear: `[^<>]*` cannot backtrack past the tag. A closer is `</kind`, optional whitespace and `>`
// (`</system >` closes as `</system>` does): `\s*` backtracks only over the whitespace after one
// `</kind`, and those runs are disjoint, so a search costs one pass over the text it covers.
const OPENER = new RegExp(`<(${SEALED_KINDS.join("|")})(\\s[^<>]*)?>`, "g")
const closerOf = (kind: SealedKind) => new RegExp(`</${kind}\\s*>`, "g")
const ATTRIBUTE = /([A-Za-z_][\w-]*)\s*=\s*"([^"]*)"/g

const attributesOf = (raw: string | undefined): Map<string, string> => {
  const out = new Map<string, string>()
  if (raw === undefined) return out
  for (const match of raw.matchAll(ATTRIBUTE)) if (!out.has(match[1]!)) out.set(match[1]!, match[2]!)
  return out
}

/** Every sealed block of one text, in order; blocks do not nest (the first closer of the kind ends one). */
export const findSealedBlocks = (text: string): Array<SealedBlock> => {
  const blocks: Array<SealedBlock> = []
  if (!text.includes("nonce")) return blocks
  // Once a kind has no closer after some offset it has none after any later one: never search again.
  const noCloserFrom = new Map<string, number>()
  const closers = new Map<SealedKind, RegExp>()
  const opener = new RegExp(OPENER.source, "g")
  let match: RegExpExecArray | null
  while ((match = opener.exec(text)) !== null) {
    const kind = match[1] as SealedKind
    const attributes = attributesOf(match[2])
    const nonce = attributes.get("nonce")
    if (nonce === undefined) continue
    const contentStart = match.index + match[0].length
    const failedFrom = noCloserFrom.get(kind)
    if (failedFrom !== undefined && failedFrom <= contentStart) continue
    let closer = closers.get(kind)
    if (closer === undefined) closers.set(kind, closer = closerOf(kind))
    closer.lastIndex = contentStart
    const closed = closer.exec(text)
    if (closed === null) {
      noCloserFrom.set(kind, contentStart)
      continue
    }
    const closeAt = closed.index
    const end = closeAt + closed[0].length
    blocks.push({
      kind,
      nonce,
      integrity: attributes.get("integrity"),
      start: match.index,
      end,
      content: text.slice(contentStart, closeAt)
    })
    opener.lastIndex = end
  }
  return blocks
}

/** Tampering is judged first (it needs no nonce): a wrong or missing-but-required hash. */
export const classify = (block: SealedBlock, nonce: NonceCheck): SealedState => {
  if (block.integrity === undefined ? HASH_REQUIRED.has(block.kind) : block.integrity !== integrityOf(block.content)) {
    return "tampered"
  }
  return nonce === "valid" ? "verified" : "unknown"
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
   * key (a property name in a tool schema), which no string edit renames. The firewall refuses such
   * a request rather than send a block enforce mode is there to remove.
   */
  readonly unremovable: number
}

const none: SealedBlockOutcome = { summary: undefined, body: undefined, edits: [], unremovable: 0 }

// The word alone, as `findSealedBlocks` reads it: the attribute may be `nonce = "…"` (spaces around
// `=`), and `nonce=` let such a block past an enforce-mode walk and a delimiter_integrity rule.
const CHEAP_SIGNS = [Buffer.from("nonce"), Buffer.from("\\u")]

/**
 * Finds, classifies and (in enforce mode) removes sealed blocks in the text
 * segments the guardrails inspect (`segmentsOf`: system prompts, message
 * text, tool results, tool definitions; never tool-call arguments). `checkAll`
 * verifies every distinct nonce of the request in one call. A body whose
 * bytes hold neither `nonce` nor a JSON `\u` escape cannot carry a block,
 * so most requests skip the walk.
 */
export const inspectSealedBlocks = <E>(options: {
  readonly surface: Surface
  readonly raw: Uint8Array
  readonly body: Json
  readonly mode: NonceMode
  readonly checkAll: (nonces: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, NonceCheck>, E>
}): Effect.Effect<SealedBlockOutcome, E> => {
  const raw = Buffer.isBuffer(options.raw) ? options.raw : Buffer.from(options.raw.buffer, options.raw.byteOffset, options.raw.length)
  if (!CHEAP_SIGNS.some((sign) => raw.includes(sign))) return Effect.succeed(none)
  // The guardrails' own segments (same walker, same paths): a block sits wherever a rule would read
  // text, and the paths are what the enforce-mode rewrite below and `spliceStrings` edit.
  const found = segmentsOf(options.surface, options.body)
    .map((segment) => ({ segment, blocks: findSealedBlocks(segment.text) }))
    .filter(({ blocks }) => blocks.length > 0)
  if (found.length === 0) return Effect.succeed(none)
  const nonces = [...new Set(found.flatMap(({ blocks }) => blocks.map((block) => block.nonce)))]
  return Effect.map(options.checkAll(nonces), (checks) => {
    const counts = { verified: 0, unknown: 0, tampered: 0 }
    let stripped = 0
    let unremovable = 0
    const rewrites: Array<{ readonly path: JsonPath; readonly text: string }> = []
    for (const { blocks, segment } of found) {
      // An object key (a property name in a tool schema) is counted but cannot be rewritten: its path
      // is that of its value, and a string edit renames no key. It stays (`stripped` says so), and in
      // enforce mode `unremovable` counts it.
      const removable = options.mode === "enforce" && segment.key !== true
      let text = ""
      let from = 0
      for (const block of blocks) {
        const state = classify(block, checks.get(block.nonce) ?? "unknown")
        counts[state]++
        if (removable && state !== "verified") {
          text += segment.text.slice(from, block.start)
          from = block.end
          stripped++
        } else if (options.mode === "enforce" && state !== "verified") {
          unremovable++
        }
      }
      if (from > 0) rewrites.push({ path: segment.path, text: text + segment.text.slice(from) })
    }
    let body: Json | undefined
    if (rewrites.length > 0) {
      // Copy only when something is removed; the parsed request stays as received.
      body = structuredClone(options.body)
      for (const rewrite of rewrites) setAt(body, rewrite.path, rewrite.text)
    }
    return { summary: { mode: options.mode, ...counts, stripped }, body, edits: rewrites, unremovable }
  })
}

/** `X-Gateway-Nonce-Mode: enforce` selects enforce mode; anything else observes. */
export const nonceModeOf = (headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>): NonceMode => {
  const value = headers["x-gateway-nonce-mode"]
  return typeof value === "string" && value.trim().toLowerCase() === "enforce" ? "enforce" : "observe"
}
