import { Schema, SchemaTransformation } from "effect"
import { statusOf } from "../../../schema/ErrorStatus.ts"
import { OpenAiErrorEnvelope } from "../../../schema/GatewayErrorEnvelope.ts"

/**
 * The management API's refusals. Each class carries its status and the
 * `code` clients branch on; on the wire every one is the gateway's OpenAI
 * dialect `{error:{message,type,code}}` (`OpenAiErrorEnvelope`), and the typed
 * client decodes that body back into the class.
 */

const fields = { message: Schema.String, code: Schema.String }

/** Bad input: a request that fails validation, a pattern RE2 refuses (the message is the compiler's). */
export class ManageInvalidRequest extends Schema.TaggedError<ManageInvalidRequest>()("ManageInvalidRequest", fields, {
  httpApiStatus: 400
}) {}

export class ManageUnauthorized extends Schema.TaggedError<ManageUnauthorized>()("ManageUnauthorized", fields, {
  httpApiStatus: 401
}) {}

export class ManageForbidden extends Schema.TaggedError<ManageForbidden>()("ManageForbidden", fields, {
  httpApiStatus: 403
}) {}

/** Also what another organization's rule or entry looks like: it does not exist for the caller. */
export class ManageNotFound extends Schema.TaggedError<ManageNotFound>()("ManageNotFound", fields, {
  httpApiStatus: 404
}) {}

/** A request body over the management API's cap (8 MiB, as the inference routes), refused once the cap is passed. */
export class ManageRequestTooLarge
  extends Schema.TaggedError<ManageRequestTooLarge>()("ManageRequestTooLarge", fields, {
    httpApiStatus: 413
  })
{}

/**
 * A body the API does not read: not JSON (`unsupported_media_type`), or compressed
 * (`unsupported_content_encoding`, as the inference routes refuse it).
 */
export class ManageUnsupportedMediaType
  extends Schema.TaggedError<ManageUnsupportedMediaType>()("ManageUnsupportedMediaType", fields, {
    httpApiStatus: 415
  })
{}

export class ManageRateLimited extends Schema.TaggedError<ManageRateLimited>()("ManageRateLimited", fields, {
  httpApiStatus: 429
}) {}

export class ManageInternal extends Schema.TaggedError<ManageInternal>()("ManageInternal", fields, {
  httpApiStatus: 500
}) {}

export class ManageUnavailable extends Schema.TaggedError<ManageUnavailable>()("ManageUnavailable", fields, {
  httpApiStatus: 503
}) {}

const DIALECT = new Map<
  number,
  new(
    props: { readonly message: string; readonly code: string }
  ) => ManageInvalidRequest | ManageNotFound | ManageUnavailable
>([
  [400, ManageInvalidRequest],
  [404, ManageNotFound],
  [503, ManageUnavailable]
])

/** The dialect's class for a domain error, by the naming its reasons follow (`…NotFound`, `…Unavailable`, else bad input). */
export type InDialect<E> = E extends { readonly _tag: `${string}NotFound` } ? ManageNotFound
  : E extends { readonly _tag: `${string}Unavailable` } ? ManageUnavailable
  : ManageInvalidRequest

/**
 * A domain refusal in this dialect: the class for the status the error's own class declares
 * (`httpApiStatus`), with the `code` clients branch on. Domain errors declare 400, 404 or 503; a
 * status without a class here is a bug, answered as the 500 it would be anyway.
 */
export const inDialect = <E extends { readonly _tag: string; readonly message: string }>(
  error: E,
  code: string,
  message: string = error.message
): InDialect<E> => {
  const Class = DIALECT.get(statusOf(error))
  if (Class === undefined) throw new Error(`${error._tag}: no management API class for status ${statusOf(error)}`)
  return new Class({ message, code }) as InDialect<E>
}

type ErrorClass<Self> = Schema.Top & (new(props: { readonly message: string; readonly code: string }) => Self) & {
  readonly Type: Self
}

/** One class as the OpenAI envelope, `type` fixed per class as the gateway's OpenAI dialect names it. */
const inEnvelope = <Self extends { readonly message: string; readonly code: string }, S extends ErrorClass<Self>>(
  self: S,
  type: string
) =>
  OpenAiErrorEnvelope.pipe(Schema.decodeTo(
    Schema.toType(self),
    SchemaTransformation.transform({
      decode: (body: typeof OpenAiErrorEnvelope.Type) =>
        new self({ message: body.error.message, code: body.error.code }) as S["Type"],
      encode: (error: S["Type"]): typeof OpenAiErrorEnvelope.Type => ({
        error: { message: (error as Self).message, type, code: (error as Self).code }
      })
    })
  ))

export const ManageInvalidRequestBody = inEnvelope(ManageInvalidRequest, "invalid_request_error")
export const ManageUnauthorizedBody = inEnvelope(ManageUnauthorized, "authentication_error")
export const ManageForbiddenBody = inEnvelope(ManageForbidden, "permission_error")
export const ManageNotFoundBody = inEnvelope(ManageNotFound, "not_found_error")
export const ManageRequestTooLargeBody = inEnvelope(ManageRequestTooLarge, "invalid_request_error")
export const ManageUnsupportedMediaTypeBody = inEnvelope(ManageUnsupportedMediaType, "invalid_request_error")
export const ManageRateLimitedBody = inEnvelope(ManageRateLimited, "rate_limit_error")
export const ManageInternalBody = inEnvelope(ManageInternal, "api_error")
export const ManageUnavailableBody = inEnvelope(ManageUnavailable, "api_error")
