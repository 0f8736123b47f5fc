import { Schema } from "effect"
import { statusOf } from "./ErrorStatus.ts"

/**
 * Gateway policy entries: an organization's allow, deny and strip entries for
 * what a request may name (provider, model, tool, MCP server, skill, client).
 * The wire form is snake_case, like the spec.
 */

export const PolicyKind = Schema.Literals(["provider", "model", "tool", "mcp", "skill", "client"])
export type PolicyKind = typeof PolicyKind.Type

/** `strip` removes a declared tool or MCP server instead of refusing the request. */
export const PolicyEffect = Schema.Literals(["allow", "deny", "strip"])
export type PolicyEffect = typeof PolicyEffect.Type

/** The kinds a strip entry may name. */
export const STRIPPABLE_KINDS: ReadonlyArray<PolicyKind> = ["tool", "mcp"]

export class GatewayPolicyEntry extends Schema.Class<GatewayPolicyEntry>("GatewayPolicyEntry")({
  uuid: Schema.String,
  org_uuid: Schema.String,
  kind: PolicyKind,
  effect: PolicyEffect,
  /** The provider slug the entry applies to; null for every provider (never null for `model`, always null for `provider`). */
  provider: Schema.NullOr(Schema.String),
  /** A provider slug, model name, tool name, MCP server name or URL, skill id or name, or client name. */
  value: Schema.String,
  created_at: Schema.DateTimeUtcFromString
}) {}

export const NewPolicyEntry = Schema.Struct({
  kind: PolicyKind,
  effect: PolicyEffect,
  provider: Schema.optional(Schema.NullOr(Schema.String)),
  value: Schema.String
})
export type NewPolicyEntry = typeof NewPolicyEntry.Type

export class PolicyEntryNotFound extends Schema.TaggedError<PolicyEntryNotFound>()("PolicyEntryNotFound", {
  uuid: Schema.String
}, { httpApiStatus: 404 }) {
  override get message() {
    return `policy entry ${this.uuid} does not exist`
  }
}

export class PolicyEntryInvalid extends Schema.TaggedError<PolicyEntryInvalid>()("PolicyEntryInvalid", {
  reason: Schema.String
}, { httpApiStatus: 400 }) {
  override get message() {
    return this.reason
  }
}

export class PolicyError extends Schema.TaggedError<PolicyError>()("PolicyError", {
  reason: Schema.Union([PolicyEntryNotFound, PolicyEntryInvalid])
}) {
  /** The status its reason declares. */
  get status() {
    return statusOf(this.reason)
  }
  override get message() {
    return this.reason.message
  }
}
