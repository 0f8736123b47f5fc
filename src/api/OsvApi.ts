import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, OpenApi } from "effect/http-api"
import { BadRequestBody, NotFoundBody } from "../../schema/ErrorBody.ts"
import {
  OsvBatchRequest,
  OsvBatchResponse,
  OsvChangesResponse,
  OsvQuery,
  OsvQueryResponse,
  OsvRecord,
  PayloadTooLargeBody
} from "../../schema/OsvQuery.ts"
import { Authentication } from "./ApiSecurity.ts"
import { codedOperation, conditionalOperation } from "./ConditionalOpenApi.ts"

/** Limits of the package queries (docs/api.md, "Package queries"). */
export const QUERY_BODY_MAX_BYTES = 64 * 1024
export const BATCH_BODY_MAX_BYTES = 4 * 1024 * 1024
export const BATCH_MAX_QUERIES = 1000
/** Records per `/v1/query` page, identifiers per `/v1/querybatch` result page. */
export const QUERY_PAGE_SIZE = 500
export const BATCH_PAGE_SIZE = 1000
export const CHANGES_LIMIT_DEFAULT = 1000
export const CHANGES_LIMIT_MAX = 10_000

/** Bodies over the route's cap: `413 {success:false,error}` before any of it is read. */
export class QueryBodyLimit extends HttpApiMiddleware.Service<QueryBodyLimit>()("vdb/api/QueryBodyLimit", {
  error: [PayloadTooLargeBody, BadRequestBody]
}) {}

export class OsvApi extends HttpApiGroup.make("osv").add(
  HttpApiEndpoint.post("query", "/query", {
    payload: OsvQuery,
    success: OsvQueryResponse,
    error: [BadRequestBody]
  }).middleware(QueryBodyLimit)
    .annotate(
      OpenApi.Description,
      "OSV-compatible: the records affecting a package (`{ecosystem, name}` or `{purl}`) at `version`, every record of the package without one. Body at most 64 KiB; 500 records a page (`next_page_token`)."
    )
    .annotate(OpenApi.Transform, codedOperation),
  HttpApiEndpoint.post("querybatch", "/querybatch", {
    payload: OsvBatchRequest,
    success: OsvBatchResponse,
    error: [BadRequestBody]
  }).middleware(QueryBodyLimit)
    .annotate(
      OpenApi.Description,
      "OSV-compatible: up to 1,000 queries; each result lists `{id, modified}`, 1,000 a page. Body at most 4 MiB."
    ),
  HttpApiEndpoint.get("osvRecord", "/vulns/:id", {
    params: { id: Schema.String },
    success: OsvRecord,
    error: [BadRequestBody, NotFoundBody]
  }).annotate(
    OpenApi.Description,
    "OSV-compatible: the OSV record of an identifier; records of other sources converted (docs/api.md)."
  )
    .annotate(OpenApi.Transform, conditionalOperation({ compressed: false })),
  HttpApiEndpoint.get("changes", "/changes", {
    query: {
      since: Schema.optionalKey(
        Schema.String.annotate({ description: "a `next_cursor`; omit to start from the beginning" })
      ),
      limit: Schema.optionalKey(
        Schema.Int.check(Schema.isGreaterThanOrEqualTo(1), Schema.isLessThanOrEqualTo(CHANGES_LIMIT_MAX))
          .annotate({ description: "1..10000, default 1000" })
      )
    },
    success: OsvChangesResponse,
    error: [BadRequestBody]
  }).annotate(OpenApi.Description, "Identifiers whose OSV record changed after the cursor, oldest change first.")
).middleware(Authentication) {}
