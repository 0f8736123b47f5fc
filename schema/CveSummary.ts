import { Schema } from "effect"
import { RecordCounts, SourceName } from "./Source.ts"

export const SummarySource = Schema.Struct({
  name: SourceName,
  /**
   * True while this source's stored file is not normalised yet: an ingestion between its two phases, the
   * start-up resume of one a crash interrupted, or a failed normalisation. Its counts are then left out.
   */
  processing: Schema.Boolean
})

export const LinkFormat = Schema.Literals(["http", "cvelistV5", "osv", "nvd-json-2.0"])

export const SummaryLink = Schema.Struct({
  /** `page` for the web page, otherwise a source name. */
  type: Schema.String,
  format: LinkFormat,
  url: Schema.String
})
export type SummaryLink = typeof SummaryLink.Type

/** `GET /v1/info/{identifier}` 200. */
export const CveSummary = Schema.Struct({
  _identifier: Schema.String,
  _timestamp: Schema.Int,
  cache_hit: Schema.Boolean,
  matched: Schema.Boolean,
  gcve: Schema.Boolean,
  lastFetchedAt: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  lastEnrichedAt: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  sources: Schema.Array(SummarySource),
  aliases: Schema.Array(Schema.String),
  ...RecordCounts.fields,
  links: Schema.Array(SummaryLink)
})
export type CveSummary = typeof CveSummary.Type

/** `GET /v1/vuln/{identifier}` 200: CVE Record Format 5.1 records, one per source. */
export const VulnRecord = Schema.Record(Schema.String, Schema.Unknown)
export const VulnRecords = Schema.Array(VulnRecord)
