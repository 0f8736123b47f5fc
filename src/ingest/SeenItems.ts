import { hash as digest } from "node:crypto"
import type { UpstreamItem } from "./Upstream.ts"

/**
 * Items of a run remembered for duplicate detection (about 200 bytes each).
 * Past this many, new keys are no longer remembered, so memory stays bounded
 * whatever the input: a later copy of such an item is written over the
 * earlier one (reported `updated` or `unchanged`) instead of being dropped.
 */
const MAX_SEEN = 1_000_000
const MAX_CONFLICTS = 50

/** One-shot `crypto.hash`: no Hash object per item (about 0.4 µs of 3.5 for a 5 KB record). */
export const contentHash = (text: string) => digest("sha256", text, "base64url")

/**
 * A duplicate-detection entry: `hash NUL position`. `join` builds a flat string (a `+` would
 * leave a rope of three objects); the hash has a fixed length and no NUL.
 */
const seenEntry = (hash: string, position: string) => [hash, position].join("\u0000")
const sameHash = (entry: string, hash: string) => entry.charCodeAt(hash.length) === 0 && entry.startsWith(hash)
const seenPosition = (entry: string) => entry.slice(entry.indexOf("\u0000") + 1)

export interface Conflict {
  readonly source: string
  readonly identifier: string
  readonly kept: string
  readonly dropped: string
}

/**
 * The items one ingest run has read, by source and identifier: a second item of the same key is
 * a duplicate (dropped), and one with other content a conflict (the first 50 are kept to report).
 */
export const makeSeenItems = () => {
  // Each item read so far: its content hash and position in one flat string (`seenEntry`). One
  // object an entry rather than three: the map lives through the whole run, so every major GC marks it.
  const seen = new Map<string, string>()
  const conflicts: Array<Conflict> = []
  return {
    conflicts: conflicts as ReadonlyArray<Conflict>,
    /** `new` (remembered while there is room), else `duplicate` or, with other content, `conflicting`. */
    see: (item: UpstreamItem, hash: string): "new" | "duplicate" | "conflicting" => {
      const key = `${item.source}\u0000${item.identifier}`
      const first = seen.get(key)
      if (first === undefined) {
        if (seen.size < MAX_SEEN) seen.set(key, seenEntry(hash, item.position))
        return "new"
      }
      if (sameHash(first, hash)) return "duplicate"
      if (conflicts.length < MAX_CONFLICTS) {
        conflicts.push({
          source: item.source,
          identifier: item.identifier,
          kept: seenPosition(first),
          dropped: item.position
        })
      }
      return "conflicting"
    }
  }
}
