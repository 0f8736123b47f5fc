import { createHash } from "node:crypto"
import { Effect } from "effect"
import type { Surface } from "../../../schema/GatewayRequest.ts"
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

// Linear: `[^<>]*` cannot backtrack past the tag, and closers are found with indexOf.
const OPENER = new RegExp(`<(${SEALED_KINDS.join("|")})(\\s[^<>]*)?>`, "g")
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
    const closer = `</${kind}>`
    const closeAt = text.indexOf(closer, contentStart)
    if (closeAt === -1) {
      noCloserFrom.set(kind, contentStart)
      continue
    }
    const end = closeAt + closer.length
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
type Path = ReadonlyArray<string | number>

/** A text segment of a request and where it sits in the parsed body. */
export interface TextSegment {
  readonly path: Path
  readonly text: string
}

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A string, or an array of parts whose `text` (or nested `content`, for tool results) holds text. */
const walkContent = (value: unknown, path: Path, out: Array<TextSegment>): void => {
  if (typeof value === "string") {
    out.push({ path, text: value })
    return
  }
  if (!Array.isArray(value)) return
  value.forEach((part, i) => {
    if (!isObject(part)) return
    // Tool calls (`tool_use`, `function_call`) carry model-generated arguments: never scanned.
    if (typeof part.text === "string") out.push({ path: [...path, i, "text"], text: part.text })
    if (part.type === "tool_result") walkContent(part.content, [...path, i, "content"], out)
    if (part.type === "function_call_output") walkContent(part.output, [...path, i, "output"], out)
  })
}

/**
 * The text segments sealed blocks may sit in: system prompts, message text,
 * tool results (chat `tool` messages, messages `tool_result` blocks,
 * responses `function_call_output`), and the responses API's `instructions`
 * and `input`.
 */
export const textSegments = (surface: Surface, body: Json): Array<TextSegment> => {
  const out: Array<TextSegment> = []
  switch (surface) {
    case "chat":
    case "messages":
      if (surface === "messages") walkContent(body.system, ["system"], out)
      if (Array.isArray(body.messages)) {
        body.messages.forEach((message, i) => {
          if (isObject(message)) walkContent(message.content, ["messages", i, "content"], out)
        })
      }
      break
    case "responses":
      if (typeof body.instructions === "string") out.push({ path: ["instructions"], text: body.instructions })
      if (typeof body.input === "string") out.push({ path: ["input"], text: body.input })
      else if (Array.isArray(body.input)) {
        body.input.forEach((item, i) => {
          if (!isObject(item)) return
          if (item.type === "function_call_output") walkContent(item.output, ["input", i, "output"], out)
          else walkContent(item.content, ["input", i, "content"], out)
        })
      }
      break
  }
  return out
}

const setAt = (root: Json, path: Path, value: string) => {
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
  readonly edits: ReadonlyArray<{ readonly path: Path; readonly text: string }>
}

const none: SealedBlockOutcome = { summary: undefined, body: undefined, edits: [] }

// The word alone, as `findSealedBlocks` reads it: the attribute may be `nonce = "…"` (spaces around
// `=`), and `nonce=` let such a block past an enforce-mode walk and a delimiter_integrity rule.
const CHEAP_SIGNS = [Buffer.from("nonce"), Buffer.from("\\u")]

/**
 * Finds, classifies and (in enforce mode) removes sealed blocks. `checkAll`
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
  const found = textSegments(options.surface, options.body)
    .map((segment) => ({ segment, blocks: findSealedBlocks(segment.text) }))
    .filter(({ blocks }) => blocks.length > 0)
  if (found.length === 0) return Effect.succeed(none)
  const nonces = [...new Set(found.flatMap(({ blocks }) => blocks.map((block) => block.nonce)))]
  return Effect.map(options.checkAll(nonces), (checks) => {
    const counts = { verified: 0, unknown: 0, tampered: 0 }
    const rewrites: Array<{ readonly path: Path; readonly text: string }> = []
    for (const { blocks, segment } of found) {
      let text = ""
      let from = 0
      for (const block of blocks) {
        const state = classify(block, checks.get(block.nonce) ?? "unknown")
        counts[state]++
        if (options.mode === "enforce" && state !== "verified") {
          text += segment.text.slice(from, block.start)
          from = block.end
        }
      }
      if (from > 0) rewrites.push({ path: segment.path, text: text + segment.text.slice(from) })
    }
    const stripped = options.mode === "enforce" ? counts.unknown + counts.tampered : 0
    let body: Json | undefined
    if (rewrites.length > 0) {
      // Copy only when something is removed; the parsed request stays as received.
      body = structuredClone(options.body)
      for (const rewrite of rewrites) setAt(body, rewrite.path, rewrite.text)
    }
    return { summary: { mode: options.mode, ...counts, stripped }, body, edits: rewrites }
  })
}

/** `X-Gateway-Nonce-Mode: enforce` selects enforce mode; anything else observes. */
export const nonceModeOf = (headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>): NonceMode => {
  const value = headers["x-gateway-nonce-mode"]
  return typeof value === "string" && value.trim().toLowerCase() === "enforce" ? "enforce" : "observe"
}
