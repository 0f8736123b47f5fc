/**
 * Worker thread of `NormalisePool`: phase 2 (normalise, then serialise the
 * records for storage) for batches of raw items, off the thread that talks to
 * the database. Items arrive as their raw text only: every item's `raw` is the
 * compact JSON of what was parsed, except YAML templates, which keep their text.
 */
import { parentPort } from "node:worker_threads"
import { parse as parseYaml } from "yaml"
import { normalise } from "./formats/index.ts"
import type { WorkerItem, WorkerResult } from "./NormalisePool.ts"
import { storedForm } from "./StoredForm.ts"
import type { UpstreamItem } from "./Upstream.ts"

const parsedOf = (item: WorkerItem): unknown => {
  try {
    return JSON.parse(item.raw)
  } catch {
    return parseYaml(item.raw, { prettyErrors: false })
  }
}

const message = (cause: unknown) => cause instanceof Error ? cause.message : String(cause)

const run = (item: WorkerItem): WorkerResult => {
  try {
    const upstream: UpstreamItem = { ...item, parsed: parsedOf(item) }
    const outputs = normalise(upstream)
    if (!Array.isArray(outputs)) return { problem: outputs as { position: string; reason: string } }
    return { outputs: outputs.map(storedForm) }
  } catch (cause) {
    return { problem: { position: item.position, reason: `normaliser failed: ${message(cause)}` } }
  }
}

parentPort!.on("message", (message: { readonly id: number; readonly items: ReadonlyArray<WorkerItem> }) => {
  parentPort!.postMessage({ id: message.id, results: message.items.map(run) })
})
