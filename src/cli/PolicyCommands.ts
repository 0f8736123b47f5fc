import { Console, DateTime, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { type GatewayPolicyEntry, type PolicyEffect, PolicyKind, STRIPPABLE_KINDS } from "../../schema/GatewayPolicy.ts"
import { FirewallAdminClient } from "../admin/FirewallAdminRpcs.ts"
import { printJson, printTable } from "./Output.ts"
import { entryUuid, json, oneOf, org, refusal, validUuid } from "./RuleCommands.ts"

const entryJson = (entry: GatewayPolicyEntry) => ({
  uuid: entry.uuid,
  org_uuid: entry.org_uuid,
  kind: entry.kind,
  effect: entry.effect,
  provider: entry.provider,
  value: entry.value,
  created_at: DateTime.formatIso(entry.created_at)
})

const provider = Flag.String("provider").pipe(
  Flag.withDescription("Only for this provider (required for --kind model; not for --kind provider)"),
  Flag.optional
)

const addEntry = (effect: PolicyEffect) => {
  const kinds = effect === "strip" ? STRIPPABLE_KINDS : PolicyKind.literals
  const value = Argument.String(effect === "strip" ? "name" : "value").pipe(Argument.withDescription(
    effect === "strip"
      ? "Tool or MCP server name to remove from requests"
      : "Provider slug, model, tool, MCP server, skill or client name"
  ))
  return Command.make(
    effect,
    {
      org,
      kind: Flag.String("kind").pipe(Flag.withDescription(kinds.join(", "))),
      provider,
      value,
      json
    },
    Effect.fnUntraced(function*(input) {
      const client = yield* FirewallAdminClient
      const uuid = yield* validUuid("--org", input.org)
      const kind = yield* oneOf("--kind", kinds, input.kind)
      const entry = yield* client.FirewallPolicyAdd({
        org: uuid,
        entry: {
          kind,
          effect,
          value: input.value,
          ...(Option.isSome(input.provider) ? { provider: input.provider.value } : {})
        }
      }).pipe(refusal)
      yield* (input.json
        ? printJson(entryJson(entry))
        : Console.log(
          `${entry.uuid}  ${effect} ${kind} ${entry.value}${
            entry.provider === null ? "" : ` (provider ${entry.provider})`
          }`
        ))
    })
  ).pipe(Command.withDescription(
    effect === "allow"
      ? "Allow a provider, model, tool, MCP server, skill or client (the first allow entry of a kind switches it to allowlist mode)"
      : effect === "deny"
      ? "Deny a provider, model, tool, MCP server, skill or client"
      : "Remove a declared tool or MCP server from requests before they go upstream"
  ))
}

const policyList = Command.make(
  "list",
  { org, json },
  Effect.fnUntraced(function*(input) {
    const client = yield* FirewallAdminClient
    const uuid = yield* validUuid("--org", input.org)
    const entries = yield* client.FirewallPolicyList({ org: uuid }).pipe(refusal)
    if (input.json) return yield* printJson(entries.map(entryJson))
    if (entries.length === 0) return yield* Console.log(`no policy entries for ${uuid}`)
    yield* printTable(
      ["UUID", "EFFECT", "KIND", "PROVIDER", "VALUE"],
      entries.map((e) => [e.uuid, e.effect, e.kind, e.provider ?? "*", e.value])
    )
  })
).pipe(Command.withDescription("List an organization's policy entries"))

const policyRemove = Command.make(
  "remove",
  { org, uuid: entryUuid("policy entry"), json },
  Effect.fnUntraced(function*(input) {
    const client = yield* FirewallAdminClient
    const orgUuid = yield* validUuid("--org", input.org)
    const uuid = yield* validUuid("UUID", input.uuid)
    yield* client.FirewallPolicyRemove({ org: orgUuid, uuid }).pipe(refusal)
    yield* (input.json ? printJson({ uuid, removed: true }) : Console.log(`removed policy entry ${uuid}`))
  })
).pipe(Command.withDescription("Delete a policy entry"))

/** `bin/vdb gateway policy ...`: needs `FirewallAdminClient`. */
export const policyCommand = Command.make("policy").pipe(
  Command.withDescription("Gateway policy: allow, deny and strip entries"),
  Command.withSubcommands([addEntry("allow"), addEntry("deny"), addEntry("strip"), policyList, policyRemove])
)
