import { Effect } from "effect"
import { Guardrails } from "../guardrails/Guardrails.ts"
import { InferenceLog } from "../inference/InferenceLog.ts"
import { Nonces } from "../nonces/Nonces.ts"
import { Policies } from "../policies/Policies.ts"
import { McpCaller } from "./McpCaller.ts"
import type { ToolNameIn, ToolParams } from "./ToolDefinitions.ts"
import { fail, pageOf, pageRequest, result } from "./ToolKit.ts"
import type { ToolHandlers } from "./VulnLookups.ts"

/** The AI-gateway tools for the caller's organization: guardrails, policies, a guardrail dry run, nonces, inference-log metadata. */
export const gatewayToolHandlers = Effect.gen(function*() {
  const guardrails = yield* Guardrails
  const policies = yield* Policies
  const nonces = yield* Nonces
  const inference = yield* InferenceLog

  const handlers: ToolHandlers<ToolNameIn<"gateway">> = {
    list_guardrails: Effect.fn("McpTools.list_guardrails")(function*(p: ToolParams<"list_guardrails">) {
      const req = yield* pageRequest(p.cursor, p.limit)
      const { orgUuid } = yield* McpCaller
      const rules = yield* guardrails.list(orgUuid).pipe(
        Effect.catch(() => fail("unavailable", "guardrail rules cannot be read right now; retry shortly"))
      )
      const page = pageOf(
        rules.map((r) => ({
          uuid: r.uuid,
          name: r.name,
          rule_type: r.rule_type,
          action: r.action,
          priority: r.priority,
          enabled: r.enabled,
          compiles: r.compiles,
          pattern: r.pattern
        })),
        req
      )
      return result(
        `${page.total} guardrail rule(s)\n${
          page.items.map((r) =>
            `- ${r.name}: ${r.rule_type} → ${r.action} (priority ${r.priority}${r.enabled ? "" : ", disabled"})`
          ).join("\n")
        }`,
        page
      )
    }),

    list_policies: Effect.fn("McpTools.list_policies")(function*(p: ToolParams<"list_policies">) {
      const req = yield* pageRequest(p.cursor, p.limit)
      const { orgUuid } = yield* McpCaller
      const entries = yield* policies.list(orgUuid).pipe(
        Effect.catch(() => fail("unavailable", "gateway policies cannot be read right now; retry shortly"))
      )
      const page = pageOf(
        entries.map((e) => ({ uuid: e.uuid, kind: e.kind, effect: e.effect, provider: e.provider, value: e.value })),
        req
      )
      return result(
        `${page.total} policy entr${page.total === 1 ? "y" : "ies"}\n${
          page.items.map((e) => `- ${e.effect} ${e.kind} ${e.value}${e.provider === null ? "" : ` (${e.provider})`}`)
            .join("\n")
        }`,
        page
      )
    }),

    check_guardrails: Effect.fn("McpTools.check_guardrails")(function*(p: ToolParams<"check_guardrails">) {
      const { orgUuid } = yield* McpCaller
      // Its length is checked as the arguments are decoded (GuardrailText).
      const check = yield* guardrails.check(orgUuid, p.text).pipe(
        Effect.catch(() => fail("unavailable", "guardrails cannot be evaluated right now; retry shortly"))
      )
      // The verdict names rules, never the matched text (nothing of the input is echoed).
      return result(
        `decision: ${check.decision}; ${check.rules.length} rule(s) matched; ${check.redactions} redaction(s)${
          check.blocked_by === undefined ? "" : `; blocked by ${check.blocked_by}`
        }`,
        check
      )
    }),

    issue_nonces: Effect.fn("McpTools.issue_nonces")(function*(p: ToolParams<"issue_nonces">) {
      const { orgUuid } = yield* McpCaller
      const count: number = p.count ?? 1
      const issued = yield* nonces.issue(orgUuid, count).pipe(
        Effect.catch(() => fail("unavailable", "nonces cannot be issued right now; retry shortly"))
      )
      return result(`${issued.count} nonce(s), expire ${issued.expires_at}`, issued)
    }),

    list_inference_log: Effect.fn("McpTools.list_inference_log")(function*(p: ToolParams<"list_inference_log">) {
      const req = yield* pageRequest(p.cursor, p.limit)
      const { orgUuid } = yield* McpCaller
      const enabled = yield* inference.enabled(orgUuid)
      const recent = yield* inference.recent(orgUuid, Math.min(1000, req.offset + req.size + 1))
      const page = pageOf(recent.map((r) => ({ ...r })), req)
      return result(
        `${enabled ? "" : "inference logging is off for this organization; "}${page.items.length} request(s)\n${
          page.items.map((r) => `- ${r.requestId} ${r.provider}/${r.model} ${r.status} ${Math.round(r.latencyMs)}ms`)
            .join("\n")
        }`,
        { enabled, items: page.items, nextCursor: page.nextCursor }
      )
    })
  }
  return handlers
})
