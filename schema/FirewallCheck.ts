import { Schema } from "effect"
import { GuardrailDecision } from "./GuardrailRule.ts"

/**
 * The answer of the dry run behind `gateway check` and `POST /manage/v1/guardrails/check`:
 * what the firewall would decide for one text, optionally sent to one
 * provider. Nothing is stored, logged or counted; the matched text never
 * appears in the result (rule names only).
 */
export const FirewallCheckResult = Schema.Struct({
  decision: GuardrailDecision,
  /** Names of the guardrail rules that matched, in evaluation order. */
  rules: Schema.Array(Schema.String),
  redactions: Schema.Int,
  blocked_by: Schema.optional(Schema.String),
  /** With a provider: the organization's provider policy (or the platform switch) refuses it before any guardrail runs. */
  refusal: Schema.optional(Schema.Struct({ code: Schema.String, message: Schema.String }))
})
export type FirewallCheckResult = typeof FirewallCheckResult.Type

export const CheckRequest = Schema.Struct({
  text: Schema.String,
  provider: Schema.optional(Schema.String)
})
export type CheckRequest = typeof CheckRequest.Type
