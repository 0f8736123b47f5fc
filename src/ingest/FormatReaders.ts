import * as Formats from "./formats/index.ts"
import type { WorkerResult } from "./NormalisePool.ts"
import type { ItemProblem, UpstreamItem } from "./Upstream.ts"

/**
 * The format readers: the real ones unless a test swaps them. `openReader`
 * reads a file incrementally; a stand-in with only `readItems` gets the
 * file's whole text (up to the per-record cap).
 */
export interface FormatReaders {
  readonly readItems: typeof Formats.readItems
  readonly openReader?: typeof Formats.openReader
  readonly normalise: typeof Formats.normalise
  readonly detectSource: typeof Formats.detectSource
}

export const isItemProblem = (x: UpstreamItem | ItemProblem | ReadonlyArray<unknown>): x is ItemProblem =>
  !Array.isArray(x) && !("raw" in x) && "reason" in x

export const message = (cause: unknown) => cause instanceof Error ? cause.message : String(cause)

export const slim = (item: UpstreamItem): UpstreamItem => ({
  source: item.source,
  identifier: item.identifier,
  raw: item.raw,
  position: item.position,
  parsed: undefined
})

export const normaliseInline = (formats: FormatReaders, item: UpstreamItem): WorkerResult => {
  let outputs: ReturnType<typeof Formats.normalise>
  try {
    outputs = formats.normalise(item)
  } catch (cause) {
    outputs = { position: item.position, reason: `normaliser failed: ${message(cause)}` }
  }
  return isItemProblem(outputs) ? { problem: outputs } : { outputs }
}

/** A whole-text reader (a test's stand-in) as an incremental one: it gets the file's text at its end. */
export const wholeTextReader =
  (readItems: typeof Formats.readItems): typeof Formats.openReader => (source, fileName) => {
    const pieces: Array<Uint8Array> = []
    let size = 0
    return {
      push(bytes) {
        size += bytes.length
        if (size <= Formats.MAX_RECORD_BYTES) pieces.push(bytes)
        return []
      },
      end: () =>
        size > Formats.MAX_RECORD_BYTES
          ? [{ position: fileName, reason: "file over the per-record cap" }]
          : readItems(source, fileName, Buffer.concat(pieces).toString("utf8"))
    }
  }
