import type { IngestSource, ItemProblem, UpstreamItem } from "../Upstream.ts"

/** Where one parsed document sits: a whole file, one NDJSON line, or one element of a bigger file. */
export interface DocContext {
  readonly source: IngestSource
  readonly fileName: string
  /** `file`, `file:line` (NDJSON) */
  readonly position: string
  /** The document's own text (the whole file, or the NDJSON line). */
  readonly text: string | undefined
}

export type Read = UpstreamItem | ItemProblem

export const problem = (position: string, reason: string): ItemProblem => ({ position, reason })

/**
 * An item. Its raw text is the compact JSON of the item, whichever file it came
 * from, so the same upstream item read from a bulk file (catalog, NDJSON, API
 * page) and from a per-id file has the same bytes and content hash: re-ingesting
 * either reports it unchanged. Only YAML templates keep their own text (`keepText`).
 */
export const itemOf = (
  ctx: DocContext,
  identifier: string,
  parsed: unknown,
  opts: { readonly index?: number; readonly keepText?: boolean } = {}
): Read => {
  const position = opts.index === undefined ? ctx.position : `${ctx.position}#${opts.index}`
  let raw: string
  try {
    raw = opts.keepText === true && ctx.text !== undefined ? ctx.text : JSON.stringify(parsed)
  } catch (cause) {
    // A record nested a few thousand levels deep overflows the serialisation's stack: that record
    // is a problem at its position, and the next one of the file is read as usual.
    return problem(position, `cannot read the record: ${cause instanceof Error ? cause.message : String(cause)}`)
  }
  return { source: ctx.source, identifier, raw, position, parsed }
}
