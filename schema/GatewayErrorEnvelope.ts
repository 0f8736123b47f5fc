import { Schema } from "effect"
import { Violation } from "./PolicyRefusal.ts"

/** `{error:{message,type,code}}`: chat, responses and chat-style listings. */
export const OpenAiErrorEnvelope = Schema.Struct({
  error: Schema.Struct({
    message: Schema.String,
    type: Schema.String,
    code: Schema.String,
    blocked_by: Schema.optional(Schema.String),
    violations: Schema.optional(Schema.Array(Violation))
  })
})

/** `{type:"error", error:{type,code,message}}`: messages and count_tokens. */
export const AnthropicErrorEnvelope = Schema.Struct({
  type: Schema.Literal("error"),
  error: Schema.Struct({
    type: Schema.String,
    code: Schema.String,
    message: Schema.String,
    blocked_by: Schema.optional(Schema.String),
    violations: Schema.optional(Schema.Array(Violation))
  })
})
