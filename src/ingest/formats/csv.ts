import { type CsvError, Parser } from "csv-parse"
import type { ItemProblem } from "../Upstream.ts"
import { problem } from "./item.ts"
import { MAX_RECORD_BYTES } from "./limits.ts"

export interface CsvRow {
  readonly row: Record<string, string>
  /** 1-based line of the file where the row ends. */
  readonly line: number
}

/** csv-parse's synchronous incremental core (what its stream `Parser` drives). */
interface CsvApi {
  parse(
    buf: Buffer | undefined,
    end: boolean,
    push: (record: { record: Record<string, string>; info: { lines: number } }) => void,
    close: () => void
  ): CsvError | undefined
}

/**
 * Rows keyed by the header, as the bytes arrive; a malformed row becomes a
 * problem at its line and the next rows still parse. A row longer than the
 * per-record cap, or a quote never closed, ends the file with one problem:
 * past it no row boundary can be trusted.
 */
/**
 * csv-parse's message without its own line count (it does not count the lines a caller skipped, so
 * the position says where) and without the value it quotes (a reason never repeats the input).
 */
const csvReason = (message: string | undefined) =>
  (message ?? "unknown").replace(/ at line \d+/u, "").replace(/, value is [\s\S]*$/u, "")

export class CsvRowReader {
  private readonly api: CsvApi
  private readonly out: Array<CsvRow | ItemProblem> = []
  private readonly fileName: string
  private readonly lineOffset: number
  failed = false
  private lastSkipped: string | undefined

  constructor(fileName: string, lineOffset: number) {
    this.fileName = fileName
    this.lineOffset = lineOffset
    const parser = new Parser({
      columns: true,
      info: true,
      bom: true,
      skip_empty_lines: true,
      skip_records_with_error: true,
      max_record_size: MAX_RECORD_BYTES,
      on_skip: (err) => {
        const position = `${fileName}:${((err as { lines?: number } | undefined)?.lines ?? 0) + lineOffset}`
        // csv-parse reports every stray quote of a row: one row is one item and one problem.
        if (position === this.lastSkipped) return
        this.lastSkipped = position
        this.out.push(problem(position, `malformed CSV row: ${csvReason(err?.message)}`))
      }
    })
    this.api = (parser as unknown as { api: CsvApi }).api
  }

  push(bytes: Uint8Array): Array<CsvRow | ItemProblem> {
    return this.run(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), false)
  }

  end(): Array<CsvRow | ItemProblem> {
    return this.run(undefined, true)
  }

  private run(buf: Buffer | undefined, end: boolean): Array<CsvRow | ItemProblem> {
    if (this.failed) return []
    let error: CsvError | undefined
    try {
      error = this.api.parse(
        buf,
        end,
        (r) => this.out.push({ row: r.record, line: r.info.lines + this.lineOffset }),
        () => {}
      )
    } catch (e) {
      error = e as CsvError
    }
    if (error !== undefined) {
      this.failed = true
      this.out.push(problem(this.fileName, `malformed CSV: ${error.message}`))
    }
    return this.out.splice(0)
  }
}
