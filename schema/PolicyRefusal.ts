import { Schema } from "effect"

/** A guardrail or policy violation as shown in block errors; never the matched content. */
export const Violation = Schema.Struct({
  policy_uuid: Schema.String,
  policy_name: Schema.String,
  rule_type: Schema.String,
  action: Schema.String,
  detail: Schema.String
})
export type Violation = typeof Violation.Type

/** Why the firewall refused a request: its error code. */
export const RefusalCode = Schema.Literals([
  "request_blocked",
  "provider_denied",
  "provider_disabled",
  "model_denied",
  "model_not_allowed",
  "tool_denied",
  "mcp_denied",
  "skill_denied",
  "client_denied",
  "delimiter_tampered",
  "request_uninspectable"
])
export type RefusalCode = typeof RefusalCode.Type

/** A 403 from the policy and guardrail steps of the pipeline. */
export class PolicyRefusal extends Schema.TaggedError<PolicyRefusal>()("PolicyRefusal", {
  refusal: RefusalCode,
  detail: Schema.String,
  blockedBy: Schema.optional(Schema.String),
  violations: Schema.optional(Schema.Array(Violation))
}, { httpApiStatus: 403 }) {
  get code() {
    return this.refusal
  }
  override get message() {
    return this.detail
  }
}
