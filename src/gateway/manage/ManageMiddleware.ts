import { ByteSize, Effect, Layer } from "effect"
import {
  HttpEffect,
  HttpIncomingMessage,
  HttpMethod,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "effect/http"
import { HttpApiMiddleware } from "effect/http-api"
import { UnsupportedContentEncoding } from "../../../schema/GatewayError.ts"
import { isApiKeyScheme } from "../../auth/ApiKey.ts"
import { ApiKeyAuth, type SignInRefused } from "../../auth/ApiKeyAuth.ts"
import { CurrentOrg } from "../../auth/CurrentOrg.ts"
import { type RateDecision, rateLimitHeaders } from "../../ratelimit/Windows.ts"
import { declaresOver } from "../../server/BodyCap.ts"
import { schemaErrorSummary } from "../../server/SchemaErrorSummary.ts"
import { isEncoded, MAX_BODY_BYTES } from "../relay/RequestBody.ts"
import { ManageBodyFormat } from "./ManageApi.ts"
import {
  ManageForbidden,
  ManageInternal,
  ManageInvalidRequest,
  ManageRateLimited,
  ManageRequestTooLarge,
  ManageUnauthorized,
  ManageUnsupportedMediaType
} from "./ManageErrors.ts"
import { ManageAuthentication, ManageFailures, ManageValidation } from "./ManageSecurity.ts"

const missingCredentials = new ManageUnauthorized({
  message: "missing credentials: send Authorization: ApiKey <org_uuid>:<hex>",
  code: "invalid_api_key"
})

/** RFC 9110: a 401 names the scheme it wants. */
const CHALLENGE = `ApiKey realm="vdb"`

/** `ApiKeyAuth`'s refusals in this API's dialect, with the vulnerability API's messages. */
const refusalOf = (refused: SignInRefused) => {
  switch (refused.reason) {
    case "malformed":
      return new ManageUnauthorized({ message: "malformed ApiKey credential", code: "invalid_api_key" })
    case "invalid":
      // One message for an unknown organization and a wrong secret: a 401 must not tell whether a UUID exists.
      return new ManageUnauthorized({ message: "invalid credentials", code: "invalid_api_key" })
    case "inactive":
      return new ManageForbidden({ message: "organization inactive", code: "organization_inactive" })
    case "limited":
      return new ManageRateLimited({ message: "rate limit exceeded", code: "rate_limit_exceeded" })
  }
}

/**
 * Signs the request in with `ApiKeyAuth`, as every surface does: the same HMAC check, active flag
 * and rate limits as the vulnerability API, so one credential means one quota. Only the `ApiKey`
 * scheme is accepted here; the refusals are rendered in the gateway's dialect, and the rate-limit
 * headers (with `Retry-After` on a 429) are added as the API adds them. Nothing goes to the usage
 * log, which records the vulnerability API's and MCP's traffic.
 */
export const ManageAuthenticationLive = Layer.effect(
  ManageAuthentication,
  Effect.gen(function*() {
    const auth = yield* ApiKeyAuth
    return ManageAuthentication.of({
      apiKey: Effect.fnUntraced(function*(httpEffect) {
        let decision: RateDecision | undefined
        yield* HttpEffect.appendPreResponseHandler((_request, response) =>
          Effect.sync(() => {
            const challenged = response.status === 401
              ? HttpServerResponse.setHeader(response, "www-authenticate", CHALLENGE)
              : response
            return decision === undefined
              ? challenged
              : HttpServerResponse.setHeaders(challenged, rateLimitHeaders(decision))
          })
        )
        const request = yield* HttpServerRequest.HttpServerRequest
        const credential = (request.headers.authorization ?? "").trim()
        if (!isApiKeyScheme(credential)) return yield* missingCredentials
        const { org } = yield* Effect.mapError(auth.verify(credential), refusalOf)
        decision = yield* auth.admit(org).pipe(
          Effect.tapError((refused) => Effect.sync(() => (decision = refused.decision))),
          Effect.mapError(refusalOf)
        )
        const principal = CurrentOrg.of({ uuid: org.uuid, perMinute: org.perMinute, perWeek: org.perWeek })
        return yield* Effect.provideService(httpEffect, CurrentOrg, principal)
      })
    })
  })
)

/** The slot that failed to decode is named; the input itself (possibly a secret) never is. */
export const ManageValidationLive = HttpApiMiddleware.layerSchemaErrorTransform(
  ManageValidation,
  (error) =>
    error.kind === "ResponseHeaders"
      ? Effect.die(error)
      : Effect.fail(
        new ManageInvalidRequest({
          message: `invalid ${slotName(error.kind)}: ${schemaErrorSummary(error.cause.message)}`,
          code: "invalid_request"
        })
      )
)

const slotName = (kind: string) => kind === "Payload" || kind === "Body" ? "request body" : kind.toLowerCase()

/**
 * The largest management request body read: the inference routes' cap, so any text the firewall
 * could be asked to inspect can also be dry-run (`POST /manage/v1/guardrails/check`).
 */
const MAX_BODY = ByteSize.fromInputUnsafe(MAX_BODY_BYTES)

const tooLarge = new ManageRequestTooLarge({
  message: `request body over ${MAX_BODY_BYTES / 1024 / 1024} MiB`,
  code: "request_too_large"
})

/** An unreadable body is reported by the platform as a defect of the payload's decoding. */
const failureOf = (
  defect: unknown
): Effect.Effect<never, ManageInternal | ManageRequestTooLarge | ManageInvalidRequest> => {
  if (HttpServerError.isHttpServerError(defect) && defect.reason._tag === "RequestParseError") {
    return Effect.fail(
      defect.reason.reason === "BodyTooLarge"
        ? tooLarge
        : new ManageInvalidRequest({ message: "the request body could not be read", code: "invalid_request" })
    )
  }
  return Effect.andThen(
    Effect.logError("management request failed", defect),
    Effect.fail(new ManageInternal({ message: "internal error", code: "internal_error" }))
  )
}

export const ManageFailuresLive = Layer.succeed(ManageFailures)((httpEffect) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    declaresOver(request.headers, MAX_BODY_BYTES)
      ? Effect.fail(tooLarge)
      : Effect.catchDefect(Effect.provideService(httpEffect, HttpIncomingMessage.MaxBodySize, MAX_BODY), failureOf))
)

const notJson = new ManageUnsupportedMediaType({
  message: "send Content-Type: application/json",
  code: "unsupported_media_type"
})

const encoded = new UnsupportedContentEncoding()
const compressed = new ManageUnsupportedMediaType({ message: encoded.message, code: encoded.code })

/** RFC 9110 15.5.16: a 415 for a content coding says which codings are taken. */
const identityOnly = HttpEffect.appendPreResponseHandler((_request, response) =>
  Effect.succeed(HttpServerResponse.setHeader(response, "accept-encoding", "identity"))
)

/** As `HttpApiBuilder` reads the header (no header: JSON), so what passes here is what it decodes. */
const mediaType = (contentType: string | undefined) => {
  const normalized = (contentType ?? "application/json").toLowerCase().trim()
  const parameters = normalized.indexOf(";")
  return parameters === -1 ? normalized : normalized.slice(0, parameters).trim()
}

/**
 * Checked before the builder decodes the payload, which would answer a type it has no decoder for
 * with a plain-text 415 that no client of this API can read, and parse a compressed body as garbage.
 */
export const ManageBodyFormatLive = Layer.succeed(ManageBodyFormat)((httpEffect, { endpoint }) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (endpoint.payload.size > 0 && HttpMethod.hasBody(request.method)) {
      if (isEncoded(request.headers["content-encoding"])) {
        yield* identityOnly
        return yield* compressed
      }
      if (!endpoint.payload.has(mediaType(request.headers["content-type"]))) return yield* notJson
    }
    return yield* httpEffect
  })
)

export const ManageMiddleware = Layer.mergeAll(
  ManageAuthenticationLive,
  ManageValidationLive,
  ManageFailuresLive,
  ManageBodyFormatLive
)
