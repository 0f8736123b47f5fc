import { Schema } from "effect"
import { statusOf } from "./ErrorStatus.ts"
import { Violation } from "./PolicyRefusal.ts"

/**
 * Guardrail rules: an organization's regular-expression rules over the text
 * of every inference request. The wire form is snake_case, like the spec.
 */

/**
 * The rule types the guardrail engine evaluates. `delimiter_integrity` has no
 * pattern: it only chooses what a tampered sealed block does (`block` or
 * `flag`). Tool, MCP, skill, client and strip rules are policy entries (see
 * docs/gateway.md), not guardrail rules.
 */
export const GuardrailRuleType = Schema.Literals(["blocked_pattern", "pii_redact", "delimiter_integrity"])
export type GuardrailRuleType = typeof GuardrailRuleType.Type

export const GuardrailAction = Schema.Literals(["block", "redact", "flag"])
export type GuardrailAction = typeof GuardrailAction.Type

export const GuardrailDecision = Schema.Literals(["allow", "redact", "flag", "block"])
export type GuardrailDecision = typeof GuardrailDecision.Type

/** Lower runs first. */
export const GuardrailPriority = Schema.Int.check(Schema.isBetween({ minimum: -1_000_000, maximum: 1_000_000 }))

export const DEFAULT_PRIORITY = 100

/** The action a type takes when none is given. */
export const defaultActionOf: Record<GuardrailRuleType, GuardrailAction> = {
  blocked_pattern: "block",
  pii_redact: "redact",
  delimiter_integrity: "flag"
}

export class GuardrailRule extends Schema.Class<GuardrailRule>("GuardrailRule")({
  uuid: Schema.String,
  org_uuid: Schema.String,
  name: Schema.String,
  rule_type: GuardrailRuleType,
  action: GuardrailAction,
  priority: GuardrailPriority,
  enabled: Schema.Boolean,
  /** RE2 syntax; null for `delimiter_integrity`. */
  pattern: Schema.NullOr(Schema.String),
  /** False when the stored pattern does not compile (older data, direct writes): the rule then enforces nothing. */
  compiles: Schema.Boolean,
  created_at: Schema.DateTimeUtcFromString,
  updated_at: Schema.DateTimeUtcFromString
}) {}

export const NewGuardrailRule = Schema.Struct({
  name: Schema.String,
  rule_type: GuardrailRuleType,
  /** Defaults by type: `blocked_pattern` blocks, `pii_redact` redacts, `delimiter_integrity` flags. */
  action: Schema.optional(GuardrailAction),
  pattern: Schema.optional(Schema.NullOr(Schema.String)),
  priority: Schema.optional(GuardrailPriority),
  enabled: Schema.optional(Schema.Boolean)
})
export type NewGuardrailRule = typeof NewGuardrailRule.Type

export const GuardrailRulePatch = Schema.Struct({
  name: Schema.optional(Schema.String),
  action: Schema.optional(GuardrailAction),
  pattern: Schema.optional(Schema.NullOr(Schema.String)),
  priority: Schema.optional(GuardrailPriority),
  enabled: Schema.optional(Schema.Boolean)
})
export type GuardrailRulePatch = typeof GuardrailRulePatch.Type

/** The dry run of `gateway check`: what the guardrails would decide for one text; nothing is changed or logged. */
export const GuardrailCheck = Schema.Struct({
  decision: GuardrailDecision,
  rules: Schema.Array(Schema.String),
  redactions: Schema.Int,
  blocked_by: Schema.optional(Schema.String)
})
export type GuardrailCheck = typeof GuardrailCheck.Type

export { Violation }

export class GuardrailRuleNotFound extends Schema.TaggedError<GuardrailRuleNotFound>()("GuardrailRuleNotFound", {
  uuid: Schema.String
}, { httpApiStatus: 404 }) {
  override get message() {
    return `guardrail rule ${this.uuid} does not exist`
  }
}

/** Bad input, including a pattern RE2 refuses (the message is the compiler's). */
export class GuardrailRuleInvalid extends Schema.TaggedError<GuardrailRuleInvalid>()("GuardrailRuleInvalid", {
  reason: Schema.String
}, { httpApiStatus: 400 }) {
  override get message() {
    return this.reason
  }
}

export class GuardrailError extends Schema.TaggedError<GuardrailError>()("GuardrailError", {
  reason: Schema.Union([GuardrailRuleNotFound, GuardrailRuleInvalid])
}) {
  /** The status its reason declares. */
  get status() {
    return statusOf(this.reason)
  }
  override get message() {
    return this.reason.message
  }
}

/**
 * Guardrail evaluation could not run: the rule store is unreachable and this
 * process holds no compiled rules for the organization. The gateway answers
 * 503 unless `VDB_GATEWAY_FAIL_OPEN=true`.
 */
export class GuardrailsUnavailable extends Schema.TaggedError<GuardrailsUnavailable>()(
  "GuardrailsUnavailable",
  {},
  { httpApiStatus: 503 }
) {
  get status() {
    return statusOf(this)
  }
  get code() {
    return "guardrails_unavailable"
  }
  override get message() {
    return "guardrail rules unavailable"
  }
}
