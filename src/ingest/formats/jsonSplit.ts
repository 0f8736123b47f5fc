import {
  type Frame,
  isAtom,
  isSpace,
  type JsonPart,
  type JsonSplitOptions,
  MAX_KEY,
  type State,
  type Unit
} from "./jsonParts.ts"
import { decodeUtf8 } from "./lines.ts"

export type { JsonPart, JsonSplitOptions } from "./jsonParts.ts"

/**
 * Finds the boundaries of a JSON document's units without building the
 * document: it tracks only the nesting depth, strings and escapes, so memory
 * is the unit being cut (at most `max` bytes plus one chunk) whatever the
 * document's size. Each unit's text is then parsed on its own (`JSON.parse`):
 * a malformed unit is reported by the caller at its position and the next one
 * is read. Structure above the units (the top-level container, keys, commas)
 * is checked here; a break there ends the document with `failure`.
 */
export class JsonSplitter {
  private readonly options: JsonSplitOptions
  private readonly frames: Array<Frame> = []
  private state: State = "top"
  /** Inside an opaque value: nesting depth, string and escape state; atoms end at a delimiter. */
  private valueKind: "container" | "string" | "atom" = "atom"
  private depth = 0
  private inString = false
  private escaped = false
  private unit: Unit | undefined
  private keyBytes: Array<number> = []
  private key: string | undefined
  private splitDone = false
  private offset = 0
  /** Why the document is malformed (scanning stops). */
  failure: string | undefined
  /** Whether any unit was cut. */
  split = false

  constructor(options: JsonSplitOptions) {
    this.options = options
  }

  *push(bytes: Uint8Array): Generator<JsonPart> {
    if (this.failure !== undefined || bytes.length === 0) return
    let unitStart = this.unit === undefined ? -1 : 0
    let i = 0
    const n = bytes.length
    while (i < n) {
      const b = bytes[i]!
      switch (this.state) {
        case "value": {
          if (this.valueKind === "atom") {
            if (isAtom(b)) {
              i++
              continue
            }
            const done = this.finishValue(bytes, unitStart, i)
            unitStart = -1
            if (done !== undefined) yield done
            continue // the delimiter is read by the enclosing state
          }
          if (this.inString) {
            if (this.escaped) {
              this.escaped = false
              i++
              continue
            }
            if (b === 0x5c) {
              this.escaped = true
              i++
              continue
            }
            if (b === 0x22) {
              this.inString = false
              i++
              if (this.valueKind === "string") {
                const done = this.finishValue(bytes, unitStart, i)
                unitStart = -1
                if (done !== undefined) yield done
              }
              continue
            }
            i++
            continue
          }
          if (b === 0x22) this.inString = true
          else if (b === 0x7b || b === 0x5b) this.depth++
          else if (b === 0x7d || b === 0x5d) {
            this.depth--
            if (this.depth === 0) {
              i++
              const done = this.finishValue(bytes, unitStart, i)
              unitStart = -1
              if (done !== undefined) yield done
              continue
            }
          }
          i++
          continue
        }
        case "key": {
          if (this.escaped) {
            this.escaped = false
            if (this.keyBytes.length < MAX_KEY) this.keyBytes.push(b)
          } else if (b === 0x5c) {
            this.escaped = true
            if (this.keyBytes.length < MAX_KEY) this.keyBytes.push(b)
          } else if (b === 0x22) {
            this.key = this.decodeKey()
            this.state = "colon"
          } else if (this.keyBytes.length < MAX_KEY) this.keyBytes.push(b)
          i++
          continue
        }
        default:
          break
      }
      if (isSpace(b)) {
        i++
        continue
      }
      switch (this.state) {
        case "top":
          if (b === 0x5b && this.options.topArray) this.open("array", undefined, true)
          else if (b === 0x7b) this.open("object", undefined, this.options.members)
          else {
            if (!this.startValue(b)) return
            continue
          }
          i++
          continue
        case "arrayValue":
          if (b === 0x5d) {
            this.close()
            i++
            continue
          }
          if (!this.startValue(b)) return
          if (this.unit !== undefined) unitStart = i
          continue
        case "arrayNext":
          if (b === 0x2c) this.state = "arrayValue"
          else if (b === 0x5d) this.close()
          else return this.fail(`expected , or ] at byte ${this.offset + i}`)
          i++
          continue
        case "objectKey":
          if (b === 0x7d) this.close()
          else if (b === 0x22) {
            this.keyBytes = []
            this.state = "key"
          } else return this.fail(`expected a member name at byte ${this.offset + i}`)
          i++
          continue
        case "colon":
          if (b !== 0x3a) return this.fail(`expected : at byte ${this.offset + i}`)
          this.state = "objectValue"
          i++
          continue
        case "objectValue": {
          const key = this.key
          if (
            b === 0x5b && !this.splitDone && key !== undefined && this.frames.length === 1 &&
            this.options.lists.includes(key)
          ) {
            this.splitDone = true
            this.open("array", key, true)
            i++
            continue
          }
          if (!this.startValue(b)) return
          if (this.unit !== undefined) unitStart = i
          continue
        }
        case "objectNext":
          if (b === 0x2c) this.state = "objectKey"
          else if (b === 0x7d) this.close()
          else return this.fail(`expected , or } at byte ${this.offset + i}`)
          i++
          continue
        case "done":
          return this.fail(`unexpected data after the document at byte ${this.offset + i}`)
      }
    }
    if (this.unit !== undefined && unitStart >= 0) this.keep(this.unit, bytes.subarray(unitStart))
    this.offset += n
  }

  /** The end of the input: a document cut short is malformed. */
  *end(): Generator<JsonPart> {
    if (this.failure !== undefined) return
    if (this.state === "value" && this.valueKind === "atom") {
      const done = this.finishValue(new Uint8Array(0), 0, 0)
      if (done !== undefined) yield done
    }
    if (this.state !== "done") this.fail("unexpected end of the document")
  }

  private fail(reason: string) {
    this.failure = reason
    this.unit = undefined
  }

  private open(kind: "array" | "object", list: string | undefined, units: boolean) {
    this.frames.push({ kind, list, units, index: 0 })
    this.state = kind === "array" ? "arrayValue" : "objectKey"
  }

  private close() {
    this.frames.pop()
    this.afterValue()
  }

  private afterValue() {
    const frame = this.frames.at(-1)
    this.state = frame === undefined ? "done" : frame.kind === "array" ? "arrayNext" : "objectNext"
  }

  /** Begins a value at byte `b` (not consumed); returns false when `b` cannot start one. */
  private startValue(b: number): boolean {
    const frame = this.frames.at(-1)
    if (b === 0x7b || b === 0x5b) {
      this.valueKind = "container"
      this.depth = 0
    } else if (b === 0x22) {
      this.valueKind = "string"
    } else if (isAtom(b)) {
      this.valueKind = "atom"
    } else {
      this.fail(`unexpected byte 0x${b.toString(16).padStart(2, "0")} at byte ${this.offset}`)
      return false
    }
    this.inString = false
    this.escaped = false
    this.state = "value"
    this.unit = frame?.units === true
      ? { pieces: [], size: 0, over: false, key: frame.kind === "object" ? this.key : undefined }
      : undefined
    return true
  }

  private keep(unit: Unit, piece: Uint8Array) {
    unit.size += piece.length
    if (unit.over) return
    if (unit.size > this.options.max) {
      unit.over = true
      unit.pieces = []
      return
    }
    unit.pieces.push(piece)
  }

  /** Ends the current value at `end` (exclusive) and returns the unit it was, if any. */
  private finishValue(bytes: Uint8Array, unitStart: number, end: number): JsonPart | undefined {
    const frame = this.frames.at(-1)
    const unit = this.unit
    this.unit = undefined
    this.afterValue()
    if (unit === undefined || frame === undefined) return undefined
    if (unitStart >= 0) this.keep(unit, bytes.subarray(unitStart, end))
    const index = frame.index++
    this.split = true
    const text = unit.over || (frame.kind === "object" && unit.key === undefined)
      ? undefined
      : decodeUtf8(unit.pieces, unit.size)
    return frame.kind === "object"
      ? { kind: "member", key: unit.key ?? "", index, text, bytes: unit.size }
      : { kind: "element", list: frame.list, index, text, bytes: unit.size }
  }

  private decodeKey(): string | undefined {
    if (this.keyBytes.length >= MAX_KEY) return undefined
    try {
      return JSON.parse(`"${Buffer.from(this.keyBytes).toString("utf8")}"`) as string
    } catch {
      return undefined
    }
  }
}
