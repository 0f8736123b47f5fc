import type { TextChange } from "./TextChanges.ts"

/**
 * The exact characters a run of redactions replaced, as changes of the text
 * the client sent. The splice writes exactly these anew and keeps every other
 * character of the literal in the client's spelling (spec 2, "Redaction
 * rewrites only the matched characters"), so nothing is guessed by diffing.
 *
 * Each rule runs on the previous rule's output: its matches are in that
 * text's units and are carried back onto the original here. Changes that
 * overlap or touch become one (a later match that runs into an earlier
 * `[REDACTED]` takes that change whole).
 */

/**
 * The changes of the original text that give `next`, from `previous` (the
 * changes that gave `current`, the text the rule ran on) and `matches`: flat
 * `[start, end, ...]` pairs in `current`'s units, sorted, disjoint, non-empty,
 * each replaced by a text `replacement` units long to give `next`.
 * Linear in the number of changes and matches.
 */
export const composeChanges = (
  previous: ReadonlyArray<TextChange>,
  matches: ReadonlyArray<number>,
  replacement: number,
  next: string
): Array<TextChange> => {
  const out: Array<TextChange> = []
  let i = 0
  let j = 0
  // What the changes consumed so far added in length: `current` − original, and `next` − `current`.
  let grownBefore = 0
  let grownByMatches = 0
  while (i < previous.length || j < matches.length) {
    const atPrevious = i < previous.length ? previous[i]!.start + grownBefore : Infinity
    const atMatch = j < matches.length ? matches[j]! : Infinity
    const start = Math.min(atPrevious, atMatch)
    const originalStart = start - grownBefore
    const nextStart = start + grownByMatches
    let end = start
    // Take every change and match that starts inside (or just at the end of) the group so far.
    for (let took = true; took;) {
      took = false
      while (i < previous.length && previous[i]!.start + grownBefore <= end) {
        const change = previous[i++]!
        end = Math.max(end, change.start + grownBefore + change.text.length)
        grownBefore += change.text.length - (change.end - change.start)
        took = true
      }
      while (j < matches.length && matches[j]! <= end) {
        end = Math.max(end, matches[j + 1]!)
        grownByMatches += replacement - (matches[j + 1]! - matches[j]!)
        j += 2
        took = true
      }
    }
    out.push({ start: originalStart, end: end - grownBefore, text: next.slice(nextStart, end + grownByMatches) })
  }
  return out
}

/**
 * The change that turns a payload literal's text into its re-encoding: a
 * base64 or `data:` payload is written anew as a whole (its bytes shift), so
 * only the head and tail the two share (the `data:` prefix, say) keep the
 * client's spelling.
 */
export const payloadChange = (before: string, after: string): Array<TextChange> => {
  const most = Math.min(before.length, after.length)
  let head = 0
  while (head < most && before.charCodeAt(head) === after.charCodeAt(head)) head++
  let tail = 0
  while (
    tail < most - head && before.charCodeAt(before.length - 1 - tail) === after.charCodeAt(after.length - 1 - tail)
  ) tail++
  if (head === before.length && head === after.length) return []
  return [{ start: head, end: before.length - tail, text: after.slice(head, after.length - tail) }]
}
