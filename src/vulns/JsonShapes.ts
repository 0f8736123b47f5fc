/** Reading parsed JSON of unknown shape (records, upstream documents) without casts. */

export const isRecord = (x: unknown): x is Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x)

export const asArray = (x: unknown): ReadonlyArray<unknown> => Array.isArray(x) ? x : []

/** Sorted, distinct. */
export const distinct = (xs: Iterable<string>): Array<string> => [...new Set(xs)].sort()
