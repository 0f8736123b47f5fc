import type { EpssScore } from "./EpssScore.ts"
import { asArray, distinct, isRecord } from "./JsonShapes.ts"

/**
 * The organization id of this service's ADP container in every record it
 * serves (a v4-shaped uuid derived from "vdb"; the normalisers write it, the
 * store recognises it when it splices EPSS in).
 */
export const VDB_ADP_ORG_ID = "7723d2c7-77d8-4b8b-a049-7a1db6267928"

/** This service's enrichment container (one per source record). */
export const isOurs = (c: unknown): c is Record<string, unknown> =>
  isRecord(c) && isRecord(c.providerMetadata) && c.providerMetadata.orgId === VDB_ADP_ORG_ID && "x_dataSource" in c

/**
 * The record with FIRST's EPSS score in this service's enrichment container
 * (merged at read/store time from the EPSS table; replaces a source's own EPSS).
 */
export const withEpss = (record: Record<string, unknown>, score: EpssScore): Record<string, unknown> => {
  const containers = isRecord(record.containers) ? record.containers : undefined
  if (containers === undefined) return record
  const x_epss = {
    score: score.score,
    percentile: score.percentile,
    date: score.date,
    modelVersion: score.modelVersion
  }
  const adp = asArray(containers.adp).map((c) =>
    isOurs(c)
      ? { ...c, x_dataCollected: distinct([...asArray(c.x_dataCollected).map(String), "epss"]), x_epss }
      : c
  )
  return { ...record, containers: { ...containers, adp } }
}
