import { parse } from "csv-parse/sync"
import type { ItemProblem } from "../Upstream.ts"
import { problem } from "./item.ts"

export interface CsvRow {
  readonly row: Record<string, string>
  /** 1-based line of the file where the row ends. */
  readonly line: number
}

/** Rows keyed by the header; a malformed row becomes a problem at its line, the rest still parse. */
export const csvRows = (
  fileName: string,
  content: string,
  lineOffset = 0
): { readonly rows: ReadonlyArray<CsvRow>; readonly problems: ReadonlyArray<ItemProblem> } => {
  const problems: Array<ItemProblem> = []
  try {
    const parsed = parse(content, {
      columns: true,
      info: true,
      bom: true,
      skip_empty_lines: true,
      skip_records_with_error: true,
      on_skip: (err) => {
        const line = (err as { lines?: number } | undefined)?.lines
        problems.push(problem(`${fileName}:${(line ?? 0) + lineOffset}`, `malformed CSV row: ${err?.message ?? "unknown"}`))
      }
    }) as Array<{ record: Record<string, string>; info: { lines: number } }>
    return { rows: parsed.map((r) => ({ row: r.record, line: r.info.lines + lineOffset })), problems }
  } catch (e) {
    return { rows: [], problems: [...problems, problem(fileName, `malformed CSV: ${(e as Error).message}`)] }
  }
}
