import type { GuardrailDecision } from "../../schema/GuardrailRule.ts"
import type { Violation } from "../../schema/PolicyRefusal.ts"

/**
 * What the guardrails answer for a request, apart from the service so the engine
 * and the compiled rules, which the service is built from, import it without a cycle.
 */

export interface GuardrailOutcome {
  readonly decision: GuardrailDecision
  /** Names of the rules that matched, in evaluation order (a blocking rule is last). */
  readonly rules: ReadonlyArray<string>
  /** Number of spans replaced with `[REDACTED]`. */
  readonly redactions: number
  /** Only when a redaction changed the body: the original bytes with only the changed JSON strings rewritten. */
  readonly body?: Uint8Array | undefined
  /** The name of the rule that blocked (decision `block`). */
  readonly blockedBy?: string | undefined
  /** One per matched rule; never the matched text. */
  readonly violations: ReadonlyArray<Violation>
  /** True when the rules could not be loaded and `VDB_GATEWAY_FAIL_OPEN=true` let the request pass. */
  readonly failedOpen?: boolean | undefined
  /** True (with decision `block`) when the body nests deeper than the guardrails read (`MAX_INSPECTED_DEPTH`). */
  readonly uninspectable?: boolean | undefined
  /** With `uninspectable`: what could not be read, for the refusal (never the text). Default: the nesting. */
  readonly uninspectableDetail?: string | undefined
}

/** An enabled `delimiter_integrity` rule: what a tampered sealed block does. */
export interface DelimiterIntegrityRule {
  readonly uuid: string
  readonly name: string
  readonly action: "block" | "redact" | "flag"
}
