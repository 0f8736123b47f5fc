import { Clock, Context, Effect, Layer } from "effect"
import { HttpEffect, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiMiddleware } from "effect/http-api"
import { BadRequest, InternalError, ServiceUnavailable } from "../../schema/ErrorBody.ts"
import { ApiKeyAuth, UNLIMITED } from "../auth/ApiKeyAuth.ts"
import { DATABASE_RETRY_AFTER_SECONDS, DATABASE_UNAVAILABLE, isDatabaseUnavailable } from "../db/DatabaseUnavailable.ts"
import { rateLimitHeaders } from "../ratelimit/Windows.ts"
import { clientAddressOf, TrustedProxies } from "../server/ClientAddress.ts"
import { schemaErrorSummary } from "../server/SchemaErrorSummary.ts"
import { Metering, type MeterSlot, RequestMeter, RequestValidation, SignedRequest } from "./ApiSecurity.ts"

const RETRY_AFTER = String(DATABASE_RETRY_AFTER_SECONDS)

/** RFC 9110 challenges of a 401: the schemes each kind of endpoint accepts. */
const CHALLENGE = `ApiKey realm="vdb", Bearer realm="vdb"`
const SIGNED_CHALLENGE = `AWS4-HMAC-SHA512 realm="vdb"`

/**
 * Registers, at the start of every API request, the pre-response step that
 * adds the rate-limit headers (and a 401's `WWW-Authenticate`) and hands the
 * finished request to the usage log (a queue offer: nothing on the response
 * path waits for the database).
 * Defects become `500 {success:false,error}` without any detail; a database that cannot be reached,
 * `503` with `Retry-After`.
 */
export const MeteringLive = Layer.effect(
  Metering,
  Effect.gen(function*() {
    const auth = yield* ApiKeyAuth
    const unavailable = Effect.andThen(
      Effect.logWarning("API request failed: the database cannot be reached"),
      Effect.fail(new ServiceUnavailable({ message: DATABASE_UNAVAILABLE }))
    )
    // An unlimited organization's headers never change: built once.
    const unlimitedHeaders = rateLimitHeaders(UNLIMITED)
    const onDefect = (defect: unknown): Effect.Effect<never, InternalError | ServiceUnavailable> =>
      isDatabaseUnavailable(defect) ? unavailable : Effect.andThen(
        Effect.logError("API request failed", defect),
        Effect.fail(new InternalError({ message: "internal server error" }))
      )
    // Every API request passes here: what it needs is read straight from the fiber's context.
    return Metering.of((httpEffect, { endpoint }) =>
      Effect.withFiber((fiber) => {
        const started = performance.now()
        const at = new Date(fiber.getRef(Clock.Clock).currentTimeMillisUnsafe())
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        const route = Context.getUnsafe(fiber.context, HttpRouter.RouteContext)
        const trusted = fiber.getRef(TrustedProxies)
        const slot: MeterSlot = { orgUuid: null, decision: null, authFailure: undefined }
        HttpEffect.appendPreResponseHandlerUnsafe(fiber.context, (_request, response) =>
          Effect.sync(() => {
            auth.record(
              request,
              slot.orgUuid,
              endpoint.path,
              route.params.identifier,
              response.status,
              started,
              at,
              clientAddressOf(trusted, request)
            )
            const challenged = response.status === 401
              ? HttpServerResponse.setHeader(
                response,
                "www-authenticate",
                endpoint.middlewares.has(SignedRequest) ? SIGNED_CHALLENGE : CHALLENGE
              )
              : response.status === 503
              ? HttpServerResponse.setHeader(response, "retry-after", RETRY_AFTER)
              : response
            return slot.decision === null
              ? challenged
              : HttpServerResponse.setHeaders(
                challenged,
                slot.decision === UNLIMITED ? unlimitedHeaders : rateLimitHeaders(slot.decision)
              )
          }))
        return httpEffect.pipe(Effect.provideService(RequestMeter, slot), Effect.catchDefect(onDefect))
      })
    )
  })
)

/** Request decoding failures as `400 {success:false,error}`; the message names the slot, not the schema. */
export const RequestValidationLive = HttpApiMiddleware.layerSchemaErrorTransform(
  RequestValidation,
  (error) =>
    error.kind === "Body" || error.kind === "ResponseHeaders"
      ? Effect.die(error)
      : Effect.fail(
        new BadRequest({ message: `invalid ${error.kind.toLowerCase()}: ${schemaErrorSummary(error.cause.message)}` })
      )
)
