import { Context, Schema } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import {
  BadRequestBody,
  ForbiddenBody,
  InternalErrorBody,
  ServiceUnavailableBody,
  TooManyRequestsBody,
  UnauthorizedBody
} from "../../schema/ErrorBody.ts"
import type { CurrentOrg } from "../auth/CurrentOrg.ts"
import type { RateDecision } from "../ratelimit/Windows.ts"

/**
 * What the authentication middleware learned about the current request, read
 * back by the metering middleware when the response goes out (usage log and
 * rate-limit headers). One mutable slot per request.
 */
export interface MeterSlot {
  orgUuid: string | null
  decision: RateDecision | null
  /** The authentication outcome, so a second security scheme does not count the request twice. */
  authFailure: unknown
}
export class RequestMeter extends Context.Service<RequestMeter, MeterSlot>()("vdb/api/RequestMeter") {}

/** Outermost: usage log, rate-limit headers, and 500 (503 while the database is unreachable) as the shared error body. */
export class Metering extends HttpApiMiddleware.Service<Metering, {
  provides: RequestMeter
}>()("vdb/api/Metering", {
  error: [InternalErrorBody, ServiceUnavailableBody]
}) {}

/** Request validation failures (params, query) as `400 {success:false,error}`. */
export class RequestValidation extends HttpApiMiddleware.Service<RequestValidation>()("vdb/api/RequestValidation", {
  error: BadRequestBody
}) {}

/** Client side: signing in for a JWT failed (the server's message is kept). */
export class SignInFailed extends Schema.TaggedError<SignInFailed>()("SignInFailed", {
  message: Schema.String
}) {}

/** What to send, as the docs page fills it in: the whole `Authorization` value, placeholders in angle brackets. */
export const API_KEY_PLACEHOLDER = "ApiKey <uuid>:<hex>"
export const SIGNED_PLACEHOLDER =
  "AWS4-HMAC-SHA512 Credential=<uuid>/<yyyymmdd>/us-east-1/vdb/aws4_request, SignedHeaders=x-amz-date, Signature=<hex>"

/**
 * The API's security schemes as OpenAPI renderers read them. The middleware takes `ApiKey` and the
 * signed scheme as HTTP authentication schemes (`HttpApiSecurity.http`), which is what they are on
 * the wire; but renderers know only the registered `http` schemes and show any other as `Basic`
 * (the curl sample on `/docs` sent `Authorization: Basic …`). Described as an API key carried in
 * `Authorization`, whose value is the whole header, every renderer sends the form above. Only the
 * document changes: the middleware and the typed client still use the HTTP schemes.
 */
export const securitySchemesForRenderers = (spec: Record<string, any>): Record<string, any> => ({
  ...spec,
  components: {
    ...spec.components,
    securitySchemes: {
      ...spec.components?.securitySchemes,
      apiKey: {
        type: "apiKey",
        in: "header",
        name: "Authorization",
        description: "`Authorization: ApiKey <uuid>:<hex>`: the organization's UUID, a colon, and the lowercase hex " +
          "HMAC-SHA256 of the UUID text keyed with the organization's secret (`bin/vdb org create` prints it as `apiKey`). " +
          "It stays valid until the secret is rotated."
      },
      bearer: {
        type: "http",
        scheme: "bearer",
        bearerFormat: "JWT",
        description: "`Authorization: Bearer <token>`, the JWT `GET /v1/auth/token` returns; valid for 15 minutes."
      },
      sigv4: {
        type: "apiKey",
        in: "header",
        name: "Authorization",
        description: `\`Authorization: ${SIGNED_PLACEHOLDER}\` with an \`X-Amz-Date: <yyyymmdd>T<hhmmss>Z\` header: ` +
          "the request signed with AWS Signature Version 4 over SHA-512, the organization's UUID as the access key and its " +
          "secret as the signing key, `x-amz-date` the only signed header (`bin/vdb info --jwt` does this)."
      }
    }
  }
})

/** `ApiKey <org>:<hex>` or `Bearer <jwt>`; counts the request against the organization's limits. */
export class Authentication extends HttpApiMiddleware.Service<Authentication, {
  provides: CurrentOrg
  requires: RequestMeter
  clientError: SignInFailed
}>()("vdb/api/Authentication", {
  requiredForClient: true,
  security: {
    apiKey: HttpApiSecurity.http({ scheme: "ApiKey" }),
    bearer: HttpApiSecurity.bearer
  },
  error: [UnauthorizedBody, ForbiddenBody, TooManyRequestsBody]
}) {}

/** `AWS4-HMAC-SHA512` signed `GET /auth/token`; counted like every other request. */
export class SignedRequest extends HttpApiMiddleware.Service<SignedRequest, {
  provides: CurrentOrg
  requires: RequestMeter
}>()("vdb/api/SignedRequest", {
  requiredForClient: true,
  security: {
    sigv4: HttpApiSecurity.http({ scheme: "AWS4-HMAC-SHA512" })
  },
  error: [UnauthorizedBody, ForbiddenBody, TooManyRequestsBody]
}) {}
