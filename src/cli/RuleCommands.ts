import { Console, DateTime, Effect, Option, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { FirewallCheckResult } from "../../schema/FirewallCheck.ts"
import {
  GuardrailAction,
  type GuardrailRule,
  GuardrailRuleType,
  type NewGuardrailRule
} from "../../schema/GuardrailRule.ts"
import { FirewallAdminClient, FirewallAdminError } from "../admin/FirewallAdminRpcs.ts"
import { wholeNumberFlag } from "./NumberFlags.ts"
import { printFields, printJson, printTable } from "./Output.ts"
import { refusalsAs } from "./Refusals.ts"

/**
 * A refused `bin/vdb gateway rule|policy|check` command. `message` is one line
 * for stderr; the CLI root prints it and exits 1.
 */
export class FirewallCommandError extends Schema.TaggedError<FirewallCommandError>()("FirewallCommandError", {
  message: Schema.String
}) {}

export const refuse = (message: string) => Effect.fail(new FirewallCommandError({ message }))

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const org = Flag.String("org").pipe(Flag.withDescription("Organization UUID"))
export const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON"), Flag.withDefault(false))
export const entryUuid = (what: string) => Argument.String("uuid").pipe(Argument.withDescription(`The ${what}'s UUID`))

export const validUuid = (flag: string, raw: string) =>
  UUID.test(raw.trim())
    ? Effect.succeed(raw.trim().toLowerCase())
    : refuse(`${flag}: not a UUID: ${JSON.stringify(raw.slice(0, 80))}`)

/** One of a fixed set, or one line naming the choices (the parser's own message spans a help page). */
export const oneOf = <const A extends string>(flag: string, choices: ReadonlyArray<A>, raw: string) =>
  (choices as ReadonlyArray<string>).includes(raw)
    ? Effect.succeed(raw as A)
    : refuse(`${flag}: ${JSON.stringify(raw.slice(0, 80))} is not one of ${choices.join(", ")}`)

/** Server refusals (unknown organization, bad pattern, ...) become the command's one-line error. */
export const refusal = refusalsAs(FirewallAdminError, refuse)

const ruleJson = (rule: GuardrailRule) => ({
  uuid: rule.uuid,
  org_uuid: rule.org_uuid,
  name: rule.name,
  rule_type: rule.rule_type,
  action: rule.action,
  priority: rule.priority,
  enabled: rule.enabled,
  pattern: rule.pattern,
  compiles: rule.compiles,
  created_at: DateTime.formatIso(rule.created_at),
  updated_at: DateTime.formatIso(rule.updated_at)
})

const printRule = (rule: GuardrailRule, asJson: boolean) => {
  const view = ruleJson(rule)
  return asJson ? printJson(view) : printFields([
    ["uuid", view.uuid],
    ["name", view.name],
    ["type", view.rule_type],
    ["action", view.action],
    ["priority", String(view.priority)],
    ["enabled", String(view.enabled)],
    ["pattern", view.pattern ?? "-"],
    ["compiles", String(view.compiles)]
  ])
}

const ruleAdd = Command.make(
  "add",
  {
    org,
    name: Flag.String("name").pipe(Flag.withDescription("Rule name, unique within the organization")),
    type: Flag.String("type").pipe(Flag.withDescription(`Rule type (${GuardrailRuleType.literals.join(", ")})`)),
    action: Flag.String("action").pipe(
      Flag.withDescription(`${GuardrailAction.literals.join(", ")} (default by type: block, redact, flag)`),
      Flag.optional
    ),
    pattern: Flag.String("pattern").pipe(
      Flag.withDescription("RE2 pattern (none for delimiter_integrity)"),
      Flag.optional
    ),
    priority: wholeNumberFlag("priority", "Lower runs first (default 100)", { min: -1_000_000, max: 1_000_000 }).pipe(
      Flag.optional
    ),
    disabled: Flag.Boolean("disabled").pipe(Flag.withDescription("Create it disabled"), Flag.withDefault(false)),
    json
  },
  Effect.fnUntraced(function*(input) {
    const client = yield* FirewallAdminClient
    const uuid = yield* validUuid("--org", input.org)
    const ruleType = yield* oneOf("--type", GuardrailRuleType.literals, input.type)
    const rule: NewGuardrailRule = {
      name: input.name,
      rule_type: ruleType,
      enabled: !input.disabled,
      ...(Option.isSome(input.action)
        ? { action: yield* oneOf("--action", GuardrailAction.literals, input.action.value) }
        : {}),
      ...(Option.isSome(input.pattern) ? { pattern: input.pattern.value } : {}),
      ...(Option.isSome(input.priority) ? { priority: input.priority.value } : {})
    }
    const created = yield* client.FirewallRuleAdd({ org: uuid, rule }).pipe(refusal)
    yield* printRule(created, input.json)
  })
).pipe(Command.withDescription("Add a guardrail rule (a pattern RE2 does not compile is refused with its message)"))

const ruleList = Command.make(
  "list",
  { org, json },
  Effect.fnUntraced(function*(input) {
    const client = yield* FirewallAdminClient
    const uuid = yield* validUuid("--org", input.org)
    const rules = yield* client.FirewallRuleList({ org: uuid }).pipe(refusal)
    if (input.json) return yield* printJson(rules.map(ruleJson))
    if (rules.length === 0) return yield* Console.log(`no guardrail rules for ${uuid}`)
    yield* printTable(
      ["UUID", "PRIORITY", "NAME", "TYPE", "ACTION", "ENABLED", "COMPILES", "PATTERN"],
      rules.map((
        r
      ) => [
        r.uuid,
        String(r.priority),
        r.name,
        r.rule_type,
        r.action,
        String(r.enabled),
        String(r.compiles),
        r.pattern ?? "-"
      ])
    )
  })
).pipe(Command.withDescription("List an organization's guardrail rules in priority order"))

const ruleRemove = Command.make(
  "remove",
  { org, uuid: entryUuid("rule"), json },
  Effect.fnUntraced(function*(input) {
    const client = yield* FirewallAdminClient
    const orgUuid = yield* validUuid("--org", input.org)
    const uuid = yield* validUuid("UUID", input.uuid)
    yield* client.FirewallRuleRemove({ org: orgUuid, uuid }).pipe(refusal)
    yield* (input.json ? printJson({ uuid, removed: true }) : Console.log(`removed guardrail rule ${uuid}`))
  })
).pipe(Command.withDescription("Delete a guardrail rule"))

const ruleSwitch = (name: "enable" | "disable") =>
  Command.make(
    name,
    { org, uuid: entryUuid("rule"), json },
    Effect.fnUntraced(function*(input) {
      const client = yield* FirewallAdminClient
      const orgUuid = yield* validUuid("--org", input.org)
      const uuid = yield* validUuid("UUID", input.uuid)
      const rule = yield* client.FirewallRuleSetEnabled({ org: orgUuid, uuid, enabled: name === "enable" }).pipe(
        refusal
      )
      yield* (input.json ? printJson(ruleJson(rule)) : Console.log(`${name}d guardrail rule ${uuid} (${rule.name})`))
    })
  ).pipe(
    Command.withDescription(
      name === "enable" ? "Enable a guardrail rule" : "Disable a guardrail rule (kept, not evaluated)"
    )
  )

/** `bin/vdb gateway rule ...`: needs `FirewallAdminClient`. */
export const ruleCommand = Command.make("rule").pipe(
  Command.withDescription("Guardrail rules (RE2 patterns over every request's text)"),
  Command.withSubcommands([ruleAdd, ruleList, ruleRemove, ruleSwitch("enable"), ruleSwitch("disable")])
)

const printCheck = (result: FirewallCheckResult, asJson: boolean) =>
  asJson ? printJson(result) : printFields([
    ["decision", result.decision],
    ["rules", result.rules.length === 0 ? "-" : result.rules.join(", ")],
    ["redactions", String(result.redactions)],
    ...(result.blocked_by !== undefined ? [["blocked by", result.blocked_by] as const] : []),
    ...(result.refusal !== undefined ? [["refused", `${result.refusal.code}: ${result.refusal.message}`] as const] : [])
  ])

/** `bin/vdb gateway check`: a dry run of the firewall over one text; changes and records nothing. */
export const checkCommand = Command.make(
  "check",
  {
    org,
    provider: Flag.String("provider").pipe(
      Flag.withDescription("Also apply the provider policy for this provider"),
      Flag.optional
    ),
    text: Flag.String("text").pipe(Flag.withDescription("The text to check")),
    json
  },
  Effect.fnUntraced(function*(input) {
    const client = yield* FirewallAdminClient
    const uuid = yield* validUuid("--org", input.org)
    const result = yield* client.FirewallCheck({
      org: uuid,
      check: { text: input.text, ...(Option.isSome(input.provider) ? { provider: input.provider.value } : {}) }
    }).pipe(refusal)
    yield* printCheck(result, input.json)
  })
).pipe(
  Command.withDescription("Dry run: the guardrail decision and matched rule names for one text (nothing is changed)")
)
