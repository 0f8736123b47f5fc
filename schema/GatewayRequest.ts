import { Schema } from "effect"

/** The wire APIs the gateway speaks. */
export const Surface = Schema.Literals(["chat", "responses", "messages", "kiro"])
export type Surface = typeof Surface.Type

/**
 * The only part of an inference body the gateway types for its own use.
 * Every other top-level field stays in the original bytes, which are what
 * goes upstream; this decoded view is never re-serialised.
 */
export const InferenceEnvelope = Schema.Struct({
  model: Schema.NonEmptyString,
  stream: Schema.optional(Schema.Unknown),
  messages: Schema.optional(Schema.Unknown)
})
export type InferenceEnvelope = typeof InferenceEnvelope.Type

/** `GET /{provider}/{org}/v1/models` on OpenAI-style surfaces. */
export const OpenAiModelList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(Schema.Struct({
    id: Schema.String,
    object: Schema.Literal("model"),
    created: Schema.Int,
    owned_by: Schema.String
  }))
})
export type OpenAiModelList = typeof OpenAiModelList.Type

/** `GET /anthropic/{org}/v1/models`, the shape Anthropic's models endpoint returns. */
export const AnthropicModelList = Schema.Struct({
  data: Schema.Array(Schema.Struct({
    type: Schema.Literal("model"),
    id: Schema.String,
    display_name: Schema.String,
    created_at: Schema.String
  })),
  has_more: Schema.Boolean,
  first_id: Schema.NullOr(Schema.String),
  last_id: Schema.NullOr(Schema.String)
})
export type AnthropicModelList = typeof AnthropicModelList.Type
