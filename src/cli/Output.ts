import { Console, Effect } from "effect"

/** `--json`: one JSON document on stdout; otherwise aligned `key: value` lines. */
export const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

const UNPRINTABLE = /[\p{Cc}\u2028\u2029]/gu

/**
 * Stored text predating validation (an organization name with a newline) must
 * not break a table row: control characters are shown as `\uXXXX` escapes.
 */
export const printable = (text: string) =>
  text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

/** `1 exploit record`, `2 exploit records`: a count with its noun, never "1 records" or "record(s)". */
export const counted = (n: number, noun: string, plural = `${noun}s`) =>
  `${n.toLocaleString("en")} ${n === 1 ? noun : plural}`

export const printFields = (fields: ReadonlyArray<readonly [string, string]>) => {
  const width = Math.max(...fields.map(([k]) => k.length)) + 1
  return Effect.forEach(fields, ([k, v]) => Console.log(`${`${k}:`.padEnd(width)} ${printable(v)}`), { discard: true })
}

export const printTable = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) => {
  const cells = rows.map((r) => r.map(printable))
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()
  return Effect.forEach([header, ...cells], (r) => Console.log(line(r)), { discard: true })
}
