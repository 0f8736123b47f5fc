import { Context, Schema } from "effect"
import { Rpc, RpcGroup } from "effect/rpc"
import type { RpcClient, RpcClientError } from "effect/rpc"
import { CheckRequest, FirewallCheckResult } from "../../schema/FirewallCheck.ts"
import {
  GatewayPolicyEntry,
  NewPolicyEntry,
  PolicyEntryInvalid,
  PolicyEntryNotFound
} from "../../schema/GatewayPolicy.ts"
import {
  GuardrailRule,
  GuardrailRuleInvalid,
  GuardrailRuleNotFound,
  GuardrailsUnavailable,
  NewGuardrailRule
} from "../../schema/GuardrailRule.ts"
import { OrgUnknown } from "../servicekeys/ServiceKeyErrors.ts"

export class FirewallBackendUnavailable extends Schema.TaggedError<FirewallBackendUnavailable>()(
  "FirewallBackendUnavailable",
  {}
) {
  override get message() {
    return "the policy store is unavailable; try again"
  }
}

/** Every refusal of a firewall admin operation; `message` is one line fit for a terminal. */
export class FirewallAdminError extends Schema.TaggedError<FirewallAdminError>()("FirewallAdminError", {
  reason: Schema.Union([
    OrgUnknown,
    GuardrailRuleNotFound,
    GuardrailRuleInvalid,
    PolicyEntryNotFound,
    PolicyEntryInvalid,
    GuardrailsUnavailable,
    FirewallBackendUnavailable
  ])
}) {
  override get message() {
    return this.reason.message
  }
}

const Org = { org: Schema.String }
const OrgAndUuid = { org: Schema.String, uuid: Schema.String }

/**
 * Guardrail rules, policy entries and the dry run, served on the admin socket
 * for `bin/vdb gateway rule|policy|check`: the same domain services as the
 * management HttpApi, for any organization (the socket's file mode is the
 * access control).
 */
export class FirewallAdminRpcs extends RpcGroup.make(
  Rpc.make("FirewallRuleAdd", {
    payload: { org: Schema.String, rule: NewGuardrailRule },
    success: GuardrailRule,
    error: FirewallAdminError
  }),
  Rpc.make("FirewallRuleList", { payload: Org, success: Schema.Array(GuardrailRule), error: FirewallAdminError }),
  Rpc.make("FirewallRuleRemove", { payload: OrgAndUuid, error: FirewallAdminError }),
  Rpc.make("FirewallRuleSetEnabled", {
    payload: { ...OrgAndUuid, enabled: Schema.Boolean },
    success: GuardrailRule,
    error: FirewallAdminError
  }),
  Rpc.make("FirewallPolicyAdd", {
    payload: { org: Schema.String, entry: NewPolicyEntry },
    success: GatewayPolicyEntry,
    error: FirewallAdminError
  }),
  Rpc.make("FirewallPolicyList", {
    payload: Org,
    success: Schema.Array(GatewayPolicyEntry),
    error: FirewallAdminError
  }),
  Rpc.make("FirewallPolicyRemove", { payload: OrgAndUuid, error: FirewallAdminError }),
  Rpc.make("FirewallCheck", {
    payload: { org: Schema.String, check: CheckRequest },
    success: FirewallCheckResult,
    error: FirewallAdminError
  })
) {}

/** The client the `bin/vdb gateway rule|policy|check` commands call (the merged `AdminClient` fits). */
export class FirewallAdminClient extends Context.Service<
  FirewallAdminClient,
  RpcClient.RpcClient<RpcGroup.Rpcs<typeof FirewallAdminRpcs>, RpcClientError.RpcClientError>
>()("vdb/gateway/FirewallAdminClient") {}
