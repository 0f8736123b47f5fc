// The vocabulary of the JSON splitter (jsonSplit.ts): the units it cuts, its options, its state
// and the byte classes it reads.

/**
 * A unit cut out of a JSON document as its bytes arrive: an element of the
 * top-level array or of a list member of the top-level object (`list` names
 * it), or a member of the top-level object. `text` is undefined when the unit
 * is longer than the cap (then only its size is known).
 */
export type JsonPart =
  | {
    readonly kind: "element"
    readonly list: string | undefined
    readonly index: number
    readonly text: string | undefined
    readonly bytes: number
  }
  | {
    readonly kind: "member"
    readonly key: string
    readonly index: number
    readonly text: string | undefined
    readonly bytes: number
  }

export interface JsonSplitOptions {
  /** Cut the elements of a top-level array. */
  readonly topArray: boolean
  /** Members of a top-level object whose array elements are cut (the first one met is split). */
  readonly lists: ReadonlyArray<string>
  /** Cut every member of a top-level object (mappings such as CVE → EDB ids). */
  readonly members: boolean
  /** Bytes a unit may have. */
  readonly max: number
}

export interface Frame {
  readonly kind: "array" | "object"
  /** The list this array is (`undefined` for the top-level array). */
  readonly list: string | undefined
  /** Whether the frame's values are units. */
  readonly units: boolean
  index: number
}

export interface Unit {
  pieces: Array<Uint8Array>
  size: number
  over: boolean
  readonly key: string | undefined
}

export type State =
  | "top"
  | "arrayValue"
  | "arrayNext"
  | "objectKey"
  | "key"
  | "colon"
  | "objectValue"
  | "objectNext"
  | "value"
  | "done"

/** Member names longer than this are not decoded: such a member is reported like a record over the cap. */
export const MAX_KEY = 64 * 1024

export const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09
export const isAtom = (b: number) =>
  (b >= 0x30 && b <= 0x39) || (b >= 0x61 && b <= 0x7a) || b === 0x2d || b === 0x2b || b === 0x2e || b === 0x45
