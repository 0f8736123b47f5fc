import type { JsonPath } from "../guardrails/JsonPath.ts"
import { openingsIn } from "./SealedGrammar.ts"

interface Part {
  readonly path: JsonPath
  readonly text: string
  readonly key?: true
}

/**
 * Sealed-block openings cut across neighbouring parts of one list (`[{type:
 * "text", text: "<sys"}, {type: "text", text: "tem nonce=\"x\">…"}]`): a
 * provider joins such parts into the one text its model reads, so the tag is
 * whole there though neither part holds it. Each is a tampered opening; no
 * single string edit removes it, so enforce mode refuses the request. Parts
 * are neighbours when their paths differ only in the list index, by one
 * (`[..., "content", 3, "text"]`, `[..., "content", 4, "text"]`). A tag has
 * no `<` after its first character, so only the text after a part's last
 * unfinished `<` can start one, carried across parts that hold neither `<`
 * nor `>`.
 */
export const splitOpenings = (parts: ReadonlyArray<Part>): number => {
  let split = 0
  // Per list field, the index of the last part seen and the unfinished tag carried from it, piece by piece.
  const chains = new Map<string, { index: number; pending: Array<string> }>()
  // Joined as they are or with a line break between parts: providers do either, and `<system` then
  // ` nonce="x">` is a tag both ways, `<system` then `nonce="x">` only the second.
  const finish = (pending: Array<string>) => {
    if (pending.length > 1 && (openingsIn(pending.join("")).length > 0 || openingsIn(pending.join("\n")).length > 0)) {
      split++
    }
    if (pending.length > 0) carrying--
    pending.length = 0
  }
  // How many chains carry a tag: while none does, a part without `<` can neither start nor finish one.
  let carrying = 0
  for (const part of parts) {
    const n = part.path.length
    const index = part.path[n - 2]
    if (part.key === true || typeof index !== "number" || (carrying === 0 && !part.text.includes("<"))) continue
    const field = JSON.stringify([...part.path.slice(0, n - 2), part.path[n - 1]])
    let chain = chains.get(field)
    if (chain === undefined) chains.set(field, chain = { index, pending: [] })
    else if (chain.index !== index - 1) finish(chain.pending)
    chain.index = index
    const { pending } = chain
    const { text } = part
    if (pending.length > 0) {
      // This part's text up to its first `<` (not included) or `>` (included) finishes the tag.
      const lt = text.indexOf("<")
      const gt = text.indexOf(">")
      const stop = gt !== -1 && (lt === -1 || gt < lt) ? gt + 1 : lt === -1 ? text.length : lt
      pending.push(text.slice(0, stop))
      if (lt === -1 && gt === -1) continue
      finish(pending)
    }
    const last = text.lastIndexOf("<")
    // An unfinished tag at the end that is not already an opening of this part (which counts it itself).
    if (last !== -1 && text.indexOf(">", last) === -1 && openingsIn(text.slice(last)).length === 0) {
      pending.push(text.slice(last))
      carrying++
    }
  }
  for (const chain of chains.values()) finish(chain.pending)
  return split
}
