import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import type { CurrentOrg } from "../../auth/CurrentOrg.ts"
import {
  ManageForbiddenBody,
  ManageInternalBody,
  ManageInvalidRequestBody,
  ManageRateLimitedBody,
  ManageRequestTooLargeBody,
  ManageUnauthorizedBody
} from "./ManageErrors.ts"

/**
 * `Authorization: ApiKey <org_uuid>:<hex>`, the vulnerability API's
 * credential: the server side signs it in with `ApiKeyAuth`, as every surface does
 * (same HMAC check, active flag and rate limits), in this API's dialect.
 */
export class ManageAuthentication extends HttpApiMiddleware.Service<ManageAuthentication, {
  provides: CurrentOrg
}>()("vdb/gateway/manage/ManageAuthentication", {
  requiredForClient: true,
  security: {
    apiKey: HttpApiSecurity.http({ scheme: "ApiKey" })
  },
  error: [ManageUnauthorizedBody, ManageForbiddenBody, ManageRateLimitedBody]
}) {}

/** Request decoding failures (path, body) as `400 {error:{message,type,code}}`. */
export class ManageValidation
  extends HttpApiMiddleware.Service<ManageValidation>()("vdb/gateway/manage/ManageValidation", {
    error: ManageInvalidRequestBody
  })
{}

/**
 * Outermost: a body past the cap becomes `413`, one that cannot be read `400`, and any other
 * defect `500`, all in the dialect, never with a stack or a message.
 */
export class ManageFailures extends HttpApiMiddleware.Service<ManageFailures>()("vdb/gateway/manage/ManageFailures", {
  error: [ManageInternalBody, ManageRequestTooLargeBody, ManageInvalidRequestBody]
}) {}
