import { Effect } from "effect"
import type { InvalidationBus } from "../db/InvalidationBus.ts"

/**
 * Identifiers whose stored data changed, on the invalidation bus
 * (`vuln-records`), so every process's response cache drops what it built
 * from them. A message is either identifiers separated by newlines or
 * `FLUSH_ALL`.
 *
 * PostgreSQL refuses a NOTIFY payload of 8000 bytes or more, and the bus adds
 * its origin and channel name to the key, so a message carries at most
 * `MAX_MESSAGE_BYTES`. An ingest batch (2,000 items, each touching its
 * identifier, its aliases and its exploits' subjects) always names its
 * identifiers, packed into as many messages as they need: flushing everything
 * instead, as this did from 4,000 identifiers, emptied every reader's cache on every batch of a large ingest,
 * so readers paid cold lookups throughout and their alias walks took CPU from
 * the ingest (measured: 8,319 records/s without readers, 5,058 with four at
 * 100 req/s). Only a write touching more than `FLUSH_ALL_FROM` identifiers (a
 * whole-store operation, far past any batch) sends one "flush all".
 */
export const FLUSH_ALL = "*"
export const MAX_MESSAGE_BYTES = 7_500
export const FLUSH_ALL_FROM = 100_000
/** NOTIFYs in flight at once for one write: their order does not matter, only that all are sent. */
const PUBLISH_CONCURRENCY = 8

/** Identifiers are matched case-insensitively: both sides fold to upper case. */
export const touchKey = (identifier: string) => identifier.toUpperCase()

/** The messages that announce `identifiers` (none for none). */
export const touchedMessages = (identifiers: ReadonlyArray<string>): ReadonlyArray<string> => {
  const distinct = [...new Set(identifiers.map(touchKey))]
  if (distinct.length === 0) return []
  if (distinct.length > FLUSH_ALL_FROM) return [FLUSH_ALL]
  const messages: Array<string> = []
  let current: Array<string> = []
  let bytes = 0
  for (const id of distinct) {
    // An identifier never holds a newline (the API refuses control characters); one longer than a message is no key.
    const size = Buffer.byteLength(id) + 1
    if (id.includes("\n") || id === FLUSH_ALL || size > MAX_MESSAGE_BYTES) return [FLUSH_ALL]
    if (bytes + size > MAX_MESSAGE_BYTES) {
      messages.push(current.join("\n"))
      current = []
      bytes = 0
    }
    current.push(id)
    bytes += size
  }
  messages.push(current.join("\n"))
  return messages
}

/** What one message asks: drop everything, or the entries built from these identifiers. */
export const readTouched = (message: string): "all" | ReadonlyArray<string> =>
  message === FLUSH_ALL ? "all" : message.split("\n")

/**
 * Publishes a committed write's identifiers. Returns once this process's
 * caches dropped them and every NOTIFY was sent (committed on PostgreSQL),
 * so whoever waits on the write (the ingest's acknowledgement) waits on this.
 */
export const publishTouched = (bus: InvalidationBus, identifiers: ReadonlyArray<string>) =>
  Effect.forEach(touchedMessages(identifiers), (message) => bus.publish("vuln-records", message), {
    discard: true,
    concurrency: PUBLISH_CONCURRENCY
  })
