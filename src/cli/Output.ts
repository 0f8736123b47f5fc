import { Console, Effect } from "effect"

/** `--json`: one JSON document on stdout; otherwise aligned `key: value` lines. */
export const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

export const printFields = (fields: ReadonlyArray<readonly [string, string]>) => {
  const width = Math.max(...fields.map(([k]) => k.length)) + 1
  return Effect.forEach(fields, ([k, v]) => Console.log(`${`${k}:`.padEnd(width)} ${v}`), { discard: true })
}

export const printTable = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()
  return Effect.forEach([header, ...rows], (r) => Console.log(line(r)), { discard: true })
}
