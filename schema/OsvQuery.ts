import { Schema } from "effect"
import { asErrorBody } from "./ErrorBody.ts"

/**
 * The OSV-compatible package queries (issue 36): the request and response
 * shapes of OSV.dev's `/v1/query`, `/v1/querybatch` and `/v1/vulns/{id}`, so
 * OSV clients need only a base URL and an `Authorization` header.
 */

export const OsvPackage = Schema.Struct({
  ecosystem: Schema.optionalKey(Schema.String),
  name: Schema.optionalKey(Schema.String),
  purl: Schema.optionalKey(Schema.String)
}).annotate({ description: "`{ecosystem, name}` (OSV ecosystem names) or `{purl}`" })

export const OsvQuery = Schema.Struct({
  package: Schema.optionalKey(OsvPackage),
  version: Schema.optionalKey(Schema.String.annotate({ description: "omit for every record of the package" })),
  commit: Schema.optionalKey(Schema.String.annotate({ description: "not supported: answers 400" })),
  page_token: Schema.optionalKey(Schema.String)
})
export type OsvQuery = typeof OsvQuery.Type

/** An OSV record (https://ossf.github.io/osv-schema/), as stored or converted (docs/api.md). */
export const OsvRecord = Schema.Record(Schema.String, Schema.Unknown).annotate({ description: "an OSV record" })

export const OsvQueryResponse = Schema.Struct({
  vulns: Schema.Array(OsvRecord),
  next_page_token: Schema.optionalKey(Schema.String)
})

export const OsvBatchRequest = Schema.Struct({ queries: Schema.Array(OsvQuery) })

export const OsvBatchResponse = Schema.Struct({
  results: Schema.Array(Schema.Struct({
    vulns: Schema.Array(Schema.Struct({ id: Schema.String, modified: Schema.String })),
    next_page_token: Schema.optionalKey(Schema.String)
  }))
})

export const OsvChangesResponse = Schema.Struct({
  changes: Schema.Array(Schema.Struct({ id: Schema.String, modified: Schema.String })),
  next_cursor: Schema.String.annotate({
    description: "pass as `since` for the next page; unchanged when nothing changed"
  }),
  has_more: Schema.Boolean
})

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  message: Schema.String
}, { httpApiStatus: 413 }) {}

export const PayloadTooLargeBody = asErrorBody(PayloadTooLarge)
