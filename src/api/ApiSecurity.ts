import { Context, Schema } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import {
  BadRequestBody,
  ForbiddenBody,
  InternalErrorBody,
  TooManyRequestsBody,
  UnauthorizedBody
} from "../../schema/ErrorBody.ts"
import type { RateDecision } from "../ratelimit/Windows.ts"

/** The authenticated organization of the current request. */
export class CurrentOrg extends Context.Service<CurrentOrg, {
  readonly uuid: string
  readonly perMinute: number
  readonly perWeek: number
}>()("vdb/api/CurrentOrg") {}

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

/** Outermost: usage log, rate-limit headers, and 500 as the shared error body. */
export class Metering extends HttpApiMiddleware.Service<Metering, {
  provides: RequestMeter
}>()("vdb/api/Metering", {
  error: InternalErrorBody
}) {}

/** Request validation failures (params, query) as `400 {success:false,error}`. */
export class RequestValidation extends HttpApiMiddleware.Service<RequestValidation>()("vdb/api/RequestValidation", {
  error: BadRequestBody
}) {}

/** Client side: signing in for a JWT failed (the server's message is kept). */
export class SignInFailed extends Schema.TaggedError<SignInFailed>()("SignInFailed", {
  message: Schema.String
}) {}

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
