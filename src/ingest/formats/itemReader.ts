import type { Read } from "./item.ts"

/** The formats a file can be read as (`--format`); by default chosen from its name. */
export const INGEST_FORMATS = ["json", "ndjson", "csv", "yaml"] as const
export type IngestFormat = typeof INGEST_FORMATS[number]

/**
 * Reads one file's items as its bytes arrive: `push` returns the items the
 * bytes complete, `end` the rest. What it holds at any time is bounded by the
 * per-record cap (`MAX_RECORD_BYTES`) plus one chunk, whatever the file's size.
 */
export interface ItemReader {
  push(bytes: Uint8Array): Iterable<Read>
  end(): Iterable<Read>
}

export const isSpace = (b: number) => b === 0x20 || (b >= 0x09 && b <= 0x0d)

export const hasContent = (bytes: Uint8Array) => {
  for (let i = 0; i < bytes.length; i++) if (!isSpace(bytes[i]!)) return true
  return false
}

export const errorMessage = (e: unknown) => (e as Error).message

/**
 * Why `JSON.parse` refused a text, without the text: V8's "Unexpected token 'x', "…" is not valid
 * JSON" quotes the input, which carried terminal escape sequences to the CLI and made every bad
 * record its own reason in the summary. Its other messages name only a position.
 */
export const jsonSyntaxError = (e: unknown): string => {
  const message = errorMessage(e)
  const token = /^Unexpected token '([\s\S])/u.exec(message)
  if (token !== null) {
    return `unexpected character U+${token[1]!.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`
  }
  return message.replace(/, "[\s\S]*" is not valid JSON$/u, "")
}
