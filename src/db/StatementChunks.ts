/**
 * Characters of text one multi-row statement carries at most. The driver
 * (`@effect/sql-pg`) encodes a statement's parameters in one synchronous call,
 * into a buffer it grows by doubling from 8 KiB, copies that into one frame and
 * writes it: an ingest batch of 2,000 records (10-30 MB of text) sent as one
 * statement held the event loop for 50-500 ms at a time in a server's profile
 * during a first sync, and every API request arriving meanwhile waited it out
 * (readers' p99 over 200 ms). Sent as statements of at most this much, the
 * loop turns between them (each one is a round trip) and the driver's buffers
 * stay small; the extra round trips cost little against the rows' own work.
 */
export const STATEMENT_CHARS = 1024 * 1024

/**
 * `rows` in order, cut into runs whose `chars` add up to at most `max` (a row
 * bigger than that is a run of its own). None for no rows.
 */
export const chunksByChars = <A>(
  rows: ReadonlyArray<A>,
  chars: (row: A) => number,
  max: number = STATEMENT_CHARS
): ReadonlyArray<ReadonlyArray<A>> => {
  const chunks: Array<ReadonlyArray<A>> = []
  let start = 0
  let size = 0
  for (let n = 0; n < rows.length; n++) {
    const c = chars(rows[n]!)
    if (n > start && size + c > max) {
      chunks.push(rows.slice(start, n))
      start = n
      size = 0
    }
    size += c
  }
  if (start < rows.length) chunks.push(start === 0 ? rows : rows.slice(start))
  return chunks
}
