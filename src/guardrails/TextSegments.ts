import type { Surface } from "../../schema/GatewayRequest.ts"
import {
  decodeBase64Text,
  type DecodedText,
  decodePercentText,
  isTextFileName,
  isTextual,
  MAX_DECODED_BYTES,
  parseDataUrl,
  parseMediaType,
  type Undecodable
} from "./EncodedText.ts"
import type { JsonPath } from "./JsonPath.ts"
import { MISSPELLED, OPAQUE_POSITIONS, type Payload, placeOf, type Position } from "./OpaquePositions.ts"
import { FIELD_NAMES } from "./ProviderFieldNames.ts"

/** One inspected text: a JSON string value of the request (or an object key) and where it is. */
export interface Segment {
  readonly path: JsonPath
  readonly text: string
  /**
   * The text is an object key (a property name in a tool's parameter schema, say), not a value:
   * it can be matched but not rewritten in place, so a redaction rule that matches it refuses
   * the request instead (`Evaluation.ts`).
   */
  readonly key?: true
  /**
   * The text was decoded from a payload (base64, a `data:` URL): a changed text is written
   * back through this, which gives `undefined` when it cannot be (the request is refused).
   */
  readonly encode?: (text: string) => string | undefined
}

/**
 * Every string of a request, and every object key but the providers' own field
 * names, is text the guardrails inspect, wherever it sits, except a payload at
 * one of the places each provider's API reference documents for it
 * (`OpaquePositions.ts`): a data: URL in a chat `image_url` part, a base64
 * `source`, a reasoning item's `encrypted_content`, a thinking block's
 * `signature`, a Kiro image's `bytes`, and the arguments the model generated
 * for a tool call (spec 2). Positions are followed from the root by type and
 * role, never found by a key's name: an `arguments` property in a tool schema,
 * a `text` on an image part and a part of an unknown type are all text.
 *
 * A payload of a textual media type (`text/*`, JSON, XML, CSV) is decoded and
 * its text inspected (`EncodedText.ts`). `segmentsOf` yields those segments
 * only when asked (`decode`): their text is not the JSON string at their path,
 * and rewriting one takes its `encode`.
 */
export const segmentsOf = (
  surface: Surface,
  parsed: unknown,
  options: { readonly decode?: boolean } = {}
): Array<Segment> => readSegments(surface, parsed, options.decode === true).segments

export interface ReadSegments {
  readonly segments: Array<Segment>
  /** Why a decoded payload could not be read (the request is refused); never its text. */
  readonly undecodable: string | undefined
}

/** The segments of a request, decoded payloads included (`GuardrailEngine`). */
export const readSegments = (surface: Surface, parsed: unknown, decode = true): ReadSegments => {
  const walker = new Walker(decode)
  if (isObject(parsed)) walker.object(parsed, ROOT, OPAQUE_POSITIONS[surface], false)
  else walker.value(parsed, ROOT, undefined, false)
  return { segments: walker.out, undecodable: walker.undecodable }
}

/** A location as a chain up to the root: a walk shares its prefixes instead of copying them at every step. */
interface PathNode {
  readonly parent: PathNode | undefined
  readonly step: string | number
  readonly depth: number
}

const ROOT: PathNode = { parent: undefined, step: "", depth: 0 }

/**
 * A segment whose path is built only when asked for (an edit, a violation's location): a body
 * nested a hundred levels with 200,000 strings at the bottom took 281 ms when every segment
 * carried its own copy of the path.
 */
class WalkedSegment implements Segment {
  readonly text: string
  readonly key?: true
  private readonly node: PathNode
  constructor(node: PathNode, text: string, key: boolean) {
    this.node = node
    this.text = text
    if (key) this.key = true
  }
  get path(): JsonPath {
    const out = new Array<string | number>(this.node.depth)
    let node: PathNode | undefined = this.node
    for (let i = this.node.depth - 1; i >= 0 && node !== undefined; i--, node = node.parent) out[i] = node.step
    return out
  }
}

/** Text decoded from a payload: a rewrite goes through `encode`. */
class DecodedSegment extends WalkedSegment {
  readonly encode: (text: string) => string | undefined
  constructor(node: PathNode, decoded: DecodedText) {
    super(node, decoded.text, false)
    this.encode = decoded.encode
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * Where schemas the model reads live: below these, every property name is text (a key the
 * providers also use, `type` or `content`, included). Found by name, which only adds text.
 */
const SCHEMA_ROOTS: ReadonlySet<string> = new Set(["tools", "functions", "response_format", "output_format"])
const SCHEMA_KEYS: ReadonlySet<string> = new Set([
  "tools",
  "schema",
  "input_schema",
  "inputSchema",
  "parameters",
  "json_schema"
])

/**
 * Past this depth nothing is walked, so no body can exhaust the stack. `GuardrailEngine` refuses a
 * body nested deeper than `MAX_INSPECTED_DEPTH` (128) before it reads segments.
 */
const MAX_WALK_DEPTH = 256

/** Depth-first over a request: `position` is where the value sits in the provider's documented shape, if anywhere. */
class Walker {
  readonly out: Array<Segment> = []
  undecodable: string | undefined
  private decodedBytes = 0
  private readonly decode: boolean
  constructor(decode: boolean) {
    this.decode = decode
  }

  value(value: unknown, at: PathNode, position: Position | undefined, inSchema: boolean): void {
    if (at.depth > MAX_WALK_DEPTH) return
    if (typeof value === "string") {
      this.out.push(new WalkedSegment(at, value, false))
    } else if (Array.isArray(value)) {
      const item = position?.items
      for (let i = 0; i < value.length; i++) {
        this.value(value[i], { parent: at, step: i, depth: at.depth + 1 }, item, inSchema)
      }
    } else if (isObject(value)) {
      this.object(value, at, position, inSchema)
    }
  }

  object(value: Record<string, unknown>, at: PathNode, position: Position | undefined, inSchema: boolean): void {
    const keys = Object.keys(value)
    let place = position === undefined ? undefined : placeOf(position, value, keys)
    if (place === MISSPELLED) {
      this.undecodable ??=
        "an object (a message, part or source) that spells a member the provider reads (type, role, media_type, ...) in another letter case"
      place = undefined
    }
    const root = at.depth === 0
    for (const key of keys) {
      const node: PathNode = { parent: at, step: key, depth: at.depth + 1 }
      if (inSchema || !FIELD_NAMES.has(key)) this.out.push(new WalkedSegment(node, key, true))
      const child = place === undefined ? undefined : place.members ?? place.fields?.get(key)
      const below = inSchema || SCHEMA_KEYS.has(key) || (root && SCHEMA_ROOTS.has(key))
      if (child?.payload !== undefined) this.payload(value[key], node, child.payload, value, below)
      else this.value(value[key], node, child, below)
    }
  }

  /** A value at an opaque position: skipped, decoded, or (a URL, a shape not documented) read as text. */
  private payload(
    value: unknown,
    at: PathNode,
    kind: Payload,
    parent: Record<string, unknown>,
    inSchema: boolean
  ): void {
    if (kind === "model-output") return
    if (typeof value !== "string") return this.value(value, at, undefined, inSchema)
    if (kind === "token" || kind === "binary") return
    if (kind === "base64-media") {
      const type = typeof parent.media_type === "string" ? parseMediaType(parent.media_type) : undefined
      if (type !== undefined && isTextual(type)) this.decoded(at, value.length, () => decodeBase64Text(value, type))
      return
    }
    const url = parseDataUrl(value)
    if (url === undefined) {
      // An https URL is text the provider (and whoever it fetches from) reads; bare base64 file data is typed by its name.
      if (kind === "media-url") this.out.push(new WalkedSegment(at, value, false))
      else if (isTextFileName(parent.filename)) {
        this.decoded(at, value.length, () => decodeBase64Text(value, { essence: "text/plain", charset: undefined }))
      }
      return
    }
    if (!isTextual(url.type)) {
      // Percent-encoded bytes of an image are no text; what a client wrote there is read as written.
      if (!url.base64) this.out.push(new WalkedSegment(at, value, false))
      return
    }
    this.decoded(
      at,
      value.length,
      () => url.base64 ? decodeBase64Text(url.payload, url.type, url.prefix) : decodePercentText(url)
    )
  }

  private decoded(at: PathNode, size: number, decode: () => DecodedText | Undecodable): void {
    if (!this.decode) return
    this.decodedBytes += size
    if (this.decodedBytes > MAX_DECODED_BYTES) {
      this.undecodable ??= `textual payloads over ${MAX_DECODED_BYTES / 1024 / 1024} MiB in all`
      return
    }
    const decoded = decode()
    if ("undecodable" in decoded) this.undecodable ??= decoded.undecodable
    else this.out.push(new DecodedSegment(at, decoded))
  }
}
