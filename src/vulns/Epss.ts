import type { EpssScore } from "./EpssScore.ts"

export type EpssEntry = EpssScore

/**
 * EPSS arrives from its own file, usually later than the records, so it is
 * merged into the enrichment containers when read (`withEpss` from the
 * normalisers, which own the container layout) rather than when written.
 */
export { withEpss } from "./EnrichmentContainer.ts"

export const isCve = (identifier: string) => /^CVE-\d{4}-\d+$/i.test(identifier)
