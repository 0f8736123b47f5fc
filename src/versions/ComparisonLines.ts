import { Result } from "effect"
import type { Ordering, VersionOrder } from "./VersionOrder.ts"

const OPERATORS = { "<": -1, "=": 0, ">": 1 } as const
const SYMBOL: Readonly<Record<Ordering, string>> = { [-1]: "<", 0: "=", 1: ">" }

/** `A < B`, `A = B` or `A > B`: the first operator with a space on each side splits the line. */
const LINE = /^(.+?) ([<=>]) (.+)$/

/** How one line of a vector file came out; `undefined` for a comment or blank line. */
export type LineVerdict =
  | { readonly passed: true }
  | { readonly passed: false; readonly why: string }

/**
 * Checks one line of a comparison-vector file (OSV's `semantic/testdata` format) against an
 * order. Blank lines and comments are skipped: `//` as the format says, and `#`, which the
 * vectors use too. A failed line says what was computed, or why the line could not be checked.
 */
export const checkLine = (order: VersionOrder, raw: string): LineVerdict | undefined => {
  const line = raw.trim()
  if (line === "" || line.startsWith("//") || line.startsWith("#")) return undefined
  const match = LINE.exec(line)
  if (match === null) return { passed: false, why: "not of the form A < B, A = B or A > B" }
  const [, a, op, b] = match as unknown as [string, string, keyof typeof OPERATORS, string]
  const computed = order.compare(a, b)
  if (Result.isFailure(computed)) return { passed: false, why: computed.failure.message }
  return computed.success === OPERATORS[op]
    ? { passed: true }
    : { passed: false, why: `computed ${a} ${SYMBOL[computed.success]} ${b}` }
}
