import { Schema } from "effect"

/**
 * Custom providers: an organization's own OpenAI- or Anthropic-compatible
 * endpoint, addressed by a slug only that organization can use. The contract
 * alone (schemas and refusals); the service is `CustomProviders.ts`. The wire
 * form is snake_case, like the rest of the management API.
 */

/** Never `kiro`: its sign-in and token minting are built-in only. */
export const CustomSurface = Schema.Literals(["chat", "responses", "messages"])
export type CustomSurface = typeof CustomSurface.Type

export class CustomProvider extends Schema.Class<CustomProvider>("CustomProvider")({
  org_uuid: Schema.String,
  slug: Schema.String,
  /** https; the surface paths are appended (`/chat/completions`, `/responses`, `/messages`). */
  base_url: Schema.String,
  surfaces: Schema.Array(CustomSurface),
  /** `bearer`, `x-api-key` or `header:<name>`: how the vault's key travels upstream. */
  auth: Schema.String,
  /** Key-free headers set when the client did not send them (e.g. a version header). */
  default_headers: Schema.Record(Schema.String, Schema.String),
  created_at: Schema.DateTimeUtcFromString
}) {}

export const NewCustomProvider = Schema.Struct({
  slug: Schema.String,
  base_url: Schema.String,
  surfaces: Schema.Array(CustomSurface),
  /** Default `bearer`. */
  auth: Schema.optional(Schema.String),
  default_headers: Schema.optional(Schema.Record(Schema.String, Schema.String))
})
export type NewCustomProvider = typeof NewCustomProvider.Type

export class CustomProviderNotFound extends Schema.TaggedError<CustomProviderNotFound>()("CustomProviderNotFound", {
  slug: Schema.String
}, { httpApiStatus: 404 }) {
  override get message() {
    return `no custom provider ${JSON.stringify(this.slug)} in this organization`
  }
}

/** Bad input, a slug already taken, or an endpoint that is not https or not public; the message says which. */
export class CustomProviderInvalid extends Schema.TaggedError<CustomProviderInvalid>()("CustomProviderInvalid", {
  reason: Schema.String
}, { httpApiStatus: 400 }) {
  override get message() {
    return this.reason
  }
}

export class CustomProviderError extends Schema.TaggedError<CustomProviderError>()("CustomProviderError", {
  reason: Schema.Union([CustomProviderNotFound, CustomProviderInvalid])
}) {
  override get message() {
    return this.reason.message
  }
}
