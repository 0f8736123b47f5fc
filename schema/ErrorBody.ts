import { Schema, SchemaTransformation } from "effect"

/** The one error body of the vulnerability data API, for every error status. */
export const ErrorBody = Schema.Struct({
  success: Schema.Literal(false),
  error: Schema.String
})
export type ErrorBody = typeof ErrorBody.Type

type ErrorClass<Self> = Schema.Top & (new(props: { readonly message: string }) => Self) & {
  readonly Type: Self
}

/**
 * Encodes an error class as `{success: false, error: <message>}` with the
 * class's status, and decodes such a body back into the class on the client.
 */
export const asErrorBody = <Self extends { readonly message: string }, S extends ErrorClass<Self>>(self: S) =>
  ErrorBody.pipe(Schema.decodeTo(
    Schema.toType(self),
    SchemaTransformation.transform({
      decode: (body: ErrorBody) => new self({ message: body.error }) as S["Type"],
      encode: (error: S["Type"]): ErrorBody => ({ success: false, error: (error as Self).message })
    })
  ))

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", {
  message: Schema.String
}, { httpApiStatus: 400 }) {}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  message: Schema.String
}, { httpApiStatus: 401 }) {}

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  message: Schema.String
}, { httpApiStatus: 403 }) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  message: Schema.String
}, { httpApiStatus: 404 }) {}

export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", {
  message: Schema.String
}, { httpApiStatus: 429 }) {}

export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", {
  message: Schema.String
}, { httpApiStatus: 500 }) {}

/** The database cannot be reached for now: 503 with `Retry-After`. */
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", {
  message: Schema.String
}, { httpApiStatus: 503 }) {}

/** Wire schemas: each error class as the shared error body. */
export const BadRequestBody = asErrorBody(BadRequest)
export const UnauthorizedBody = asErrorBody(Unauthorized)
export const ForbiddenBody = asErrorBody(Forbidden)
export const NotFoundBody = asErrorBody(NotFound)
export const TooManyRequestsBody = asErrorBody(TooManyRequests)
export const InternalErrorBody = asErrorBody(InternalError)
export const ServiceUnavailableBody = asErrorBody(ServiceUnavailable)
