import { type Context, Metric } from "effect"
import { RefusalCode } from "../../../schema/PolicyRefusal.ts"
import type { Decision } from "./Verdict.ts"

// The firewall's outcomes in /metrics (docs/operations.md). One metric per label value, built
// here once: a request costs one counter update, nothing allocated.

const DECISIONS: ReadonlyArray<Decision> = ["allow", "flag", "redact", "block"]

const decisions = Object.fromEntries(DECISIONS.map((decision) => [
  decision,
  Metric.counter("vdb_gateway_firewall_decisions_total", {
    description: "Inference requests by the firewall's decision: allow, flag, redact or block",
    incremental: true,
    attributes: { decision }
  })
])) as Record<Decision, Metric.Counter<number>>

const refusals = Object.fromEntries(RefusalCode.literals.map((refusal) => [
  refusal,
  Metric.counter("vdb_gateway_policy_refusals_total", {
    description: "Inference requests refused (403) by the policy and guardrail steps, by refusal code",
    incremental: true,
    attributes: { refusal }
  })
])) as Record<RefusalCode, Metric.Counter<number>>

/** A request the firewall let through, with its decision. */
export const countDecision = (decision: Decision, context: Context.Context<never>): void =>
  decisions[decision].updateUnsafe(1, context)

/** A request the firewall refused: a `block` decision, by the refusal's code. */
export const countRefusal = (refusal: RefusalCode, context: Context.Context<never>): void => {
  decisions.block.updateUnsafe(1, context)
  refusals[refusal].updateUnsafe(1, context)
}
