import { Schema } from "effect"
import { AnthropicErrorEnvelope, OpenAiErrorEnvelope } from "../../../schema/GatewayErrorEnvelope.ts"
import type { FailureView } from "./GatewayFailure.ts"

/** The error envelope of the route called, never the provider's. */
export type Dialect = "openai" | "anthropic"

const openAiType = (view: FailureView): string => {
  if (view.code === "request_blocked") return "policy_violation"
  switch (view.status) {
    case 400:
    case 413:
      return "invalid_request_error"
    case 401:
      return "authentication_error"
    case 403:
      return "permission_error"
    case 404:
      return "not_found_error"
    default:
      return view.status >= 500 ? "api_error" : "invalid_request_error"
  }
}

const anthropicType = (status: number): string => {
  switch (status) {
    case 400:
      return "invalid_request_error"
    case 401:
      return "authentication_error"
    case 403:
      return "permission_error"
    case 404:
      return "not_found_error"
    case 413:
      return "request_too_large"
    default:
      return status >= 500 ? "api_error" : "invalid_request_error"
  }
}

const guardrailFields = (view: FailureView) => ({
  ...(view.blockedBy !== undefined ? { blocked_by: view.blockedBy } : {}),
  ...(view.violations !== undefined ? { violations: view.violations } : {})
})

// One encoder per dialect, derived from the envelope schemas the OpenAPI document publishes:
// what a client is told it will receive is what the encoder can produce.
const openAiJson = Schema.encodeSync(Schema.fromJsonString(OpenAiErrorEnvelope))
const anthropicJson = Schema.encodeSync(Schema.fromJsonString(AnthropicErrorEnvelope))

/** `{error:{message,type,code}}` (`OpenAiErrorEnvelope`). */
export const encodeOpenAi = (view: FailureView): string =>
  openAiJson({
    error: { message: view.message, type: openAiType(view), code: view.code, ...guardrailFields(view) }
  })

/** `{type:"error", error:{type,code,message}}` (`AnthropicErrorEnvelope`). */
export const encodeAnthropic = (view: FailureView): string =>
  anthropicJson({
    type: "error",
    error: { type: anthropicType(view.status), code: view.code, message: view.message, ...guardrailFields(view) }
  })

export const encodeFailure = (dialect: Dialect, view: FailureView): string =>
  dialect === "openai" ? encodeOpenAi(view) : encodeAnthropic(view)
