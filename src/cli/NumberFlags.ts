import { Option } from "effect"
import { Flag } from "effect/cli"

/** A value short and printable enough to quote back in one line; anything else is not shown. */
const QUOTABLE = /^[\x20-\x7e]{1,64}$/

const WHOLE = /^[+-]?\d{1,16}$/

export interface WholeNumberRange {
  readonly min: number
  /** Unset: any safe integer from `min` on. */
  readonly max?: number
  /** What a special value means, shown after the range: `0 = unlimited`. */
  readonly note?: string
}

/** `>= 0` or `from 1 to 1000`: a maximum no one would reach (a database column's) is left unsaid. */
const rangeText = ({ max, min, note }: WholeNumberRange) =>
  `${max === undefined || max >= 2_147_483_647 ? `>= ${min}` : `from ${min} to ${max}`}${
    note === undefined ? "" : ` (${note})`
  }`

/**
 * A whole-number flag whose every refusal is one sentence with the range: `--per-minute abc` and
 * `--per-minute -3` both say `--per-minute must be a whole number >= 0 (0 = unlimited), got …`.
 * `Flag.Int` refused a word with "expected a string representing a finite number" before any
 * check of ours ran. The flag is parsed as text, so the sentence covers both; a value that would
 * break the line (a newline) is not quoted back.
 */
export const wholeNumberFlag = (name: string, description: string, range: WholeNumberRange) =>
  Flag.String(name).pipe(
    Flag.withDescription(`${description}; a whole number ${rangeText(range)}`),
    Flag.withMetavar("integer"),
    Flag.filterMap(
      (raw) => {
        const text = raw.trim()
        const n = WHOLE.test(text) ? Number(text) : Number.NaN
        return Number.isSafeInteger(n) && n >= range.min && n <= (range.max ?? Number.MAX_SAFE_INTEGER)
          ? Option.some(n)
          : Option.none()
      },
      (raw) => `--${name} must be a whole number ${rangeText(range)}${QUOTABLE.test(raw) ? `, got ${raw}` : ""}`
    )
  )
