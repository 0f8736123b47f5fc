import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { CveSummary, VulnRecords } from "../../schema/CveSummary.ts"
import { BadRequestBody, NotFoundBody } from "../../schema/ErrorBody.ts"
import { ExploitResponse } from "../../schema/ExploitResponse.ts"
import { TokenResponse } from "../../schema/TokenResponse.ts"
import { exploitsExample, recordsExample, summaryExample, tokenExample } from "./ApiExamples.ts"
import {
  Authentication,
  Metering,
  RequestValidation,
  securitySchemesForRenderers,
  SignedRequest
} from "./ApiSecurity.ts"
import { conditionalOperation } from "./ConditionalOpenApi.ts"
import { OsvApi } from "./OsvApi.ts"

const Identifier = { identifier: Schema.String }

export const EXPLOIT_LIMIT_DEFAULT = 100
export const EXPLOIT_LIMIT_MAX = 1000

const ExploitQuery = {
  limit: Schema.optionalKey(
    Schema.Int.check(Schema.isGreaterThanOrEqualTo(1), Schema.isLessThanOrEqualTo(EXPLOIT_LIMIT_MAX))
      .annotate({ description: "1..1000, default 100; caps the exploits array only" })
  ),
  offset: Schema.optionalKey(
    Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).annotate({ description: ">= 0, default 0" })
  ),
  include_content: Schema.optionalKey(
    Schema.Boolean.annotate({ description: "include raw bodies (rawContent, moduleContent, ...); default false" })
  )
}

/**
 * An operation that only ever fails (its success is `Schema.Never`): the
 * generated document still lists a 200 for the success that cannot happen,
 * which a generated client would model, so only the error statuses stay.
 */
const errorOnlyOperation = (operation: Record<string, any>): Record<string, any> => ({
  ...operation,
  responses: Object.fromEntries(Object.entries(operation.responses ?? {}).filter(([status]) => !status.startsWith("2")))
})

export class AuthApi extends HttpApiGroup.make("auth").add(
  HttpApiEndpoint.get("token", "/auth/token", { success: TokenResponse.annotate({ examples: [tokenExample] }) })
    .middleware(SignedRequest)
    .annotate(OpenApi.Description, "Sign in with an AWS4-HMAC-SHA512 signed request; returns a 15-minute JWT."),
  HttpApiEndpoint.post("tokenPost", "/auth/token", { success: Schema.Never, error: BadRequestBody })
    .annotate(OpenApi.Description, "Always 400: use GET with the signed Authorization header.")
    .annotate(OpenApi.Transform, errorOnlyOperation)
) {}

export class VulnApi extends HttpApiGroup.make("vulns").add(
  HttpApiEndpoint.get("info", "/info/:identifier", {
    params: Identifier,
    success: CveSummary.annotate({ examples: [summaryExample] }),
    error: [BadRequestBody, NotFoundBody]
  }).annotate(
    OpenApi.Description,
    "Coverage and count summary of a CVE (`CVE-<year>-<number>` or `<year>-<number>`). 400 for an identifier over 100 characters or with control characters."
  )
    .annotate(OpenApi.Transform, conditionalOperation({ compressed: false })),
  HttpApiEndpoint.get("vuln", "/vuln/:identifier", {
    params: Identifier,
    success: VulnRecords.annotate({ examples: [recordsExample] }),
    error: [BadRequestBody, NotFoundBody]
  }).annotate(OpenApi.Description, "CVE Record Format 5.1 records, one per source that knows the identifier.")
    .annotate(OpenApi.Transform, conditionalOperation({ compressed: true })),
  HttpApiEndpoint.get("vulnMissing", "/vuln", {
    success: Schema.Never,
    error: BadRequestBody
  }).annotate(OpenApi.Description, "Always 400: the identifier is missing.")
    .annotate(OpenApi.Transform, errorOnlyOperation),
  HttpApiEndpoint.get("exploits", "/exploits/:identifier", {
    params: Identifier,
    query: ExploitQuery,
    success: ExploitResponse.annotate({ examples: [exploitsExample] }),
    error: [BadRequestBody, NotFoundBody]
  }).annotate(OpenApi.Description, "Exploit, proof-of-concept and sighting records, newest first.")
    .annotate(OpenApi.Transform, conditionalOperation({ compressed: false }))
).middleware(Authentication) {}

/** The vulnerability data API (spec 1): the single source of routes, OpenAPI, errors and the client. */
export class Api extends HttpApi.make("vdb")
  .add(AuthApi)
  .add(VulnApi)
  .add(OsvApi)
  .middleware(RequestValidation)
  .middleware(Metering)
  .prefix("/v1")
  .annotateMerge(OpenApi.annotations({
    title: "vdb vulnerability data API",
    version: "1.0.0",
    // Renderers read descriptions as Markdown, where a bare `<message>` is an HTML tag and vanishes: placeholders go in code spans.
    description: "Errors: every error status answers `{\"success\": false, \"error\": \"<message>\"}`.",
    transform: securitySchemesForRenderers
  }))
{}
