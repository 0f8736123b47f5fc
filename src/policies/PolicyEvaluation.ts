import { PolicyRefusal } from "../../schema/GatewayError.ts"
import type { Surface } from "../../schema/GatewayRequest.ts"
import { declaredOf, historyOf, type McpServerRef, type SkillRef } from "./DeclaredCapabilities.ts"
import { admits, type KindList, type PolicySnapshot, type ProviderPolicy } from "./PolicySnapshot.ts"
import type { Removal } from "../guardrails/JsonSplice.ts"
import { stripDeclared, type Stripped } from "./ToolStrip.ts"

/**
 * Pure policy decisions over a compiled snapshot: each returns the refusal
 * (403 with its code, the message naming what was refused) or nothing.
 */

type Json = Readonly<Record<string, unknown>>

const refuse = (refusal: PolicyRefusal["refusal"], detail: string) => new PolicyRefusal({ refusal, detail })

/**
 * Provider policy. `listing` routes (`/models`, `/nonces`) are refused only by
 * the organization's own provider policy, never by the platform-wide switch.
 */
export const providerRefusal = (
  snapshot: PolicySnapshot,
  slug: string,
  disabled: ReadonlySet<string>,
  listing: boolean
): PolicyRefusal | undefined => {
  if (!listing && disabled.has(slug)) return refuse("provider_disabled", `provider ${slug} is disabled on this gateway`)
  switch (admits(snapshot.providers, slug)) {
    case "denied":
      return refuse("provider_denied", `provider ${slug} is denied by this organization's policy`)
    case "not_allowed":
      return refuse("provider_denied", `provider ${slug} is not in this organization's provider allowlist`)
    case "ok":
      return undefined
  }
}

export const modelRefusal = (policy: ProviderPolicy, slug: string, model: string): PolicyRefusal | undefined => {
  switch (admits(policy.models, model)) {
    case "denied":
      return refuse("model_denied", `model ${model} is denied for provider ${slug}`)
    case "not_allowed":
      return refuse("model_not_allowed", `model ${model} is not in the allowlist for provider ${slug}`)
    case "ok":
      return undefined
  }
}

/** The catalog models an organization may see. */
export const visibleModels = (policy: ProviderPolicy, models: ReadonlyArray<string>): ReadonlyArray<string> =>
  policy.models.allow.size === 0 && policy.models.deny.size === 0
    ? models
    : models.filter((model) => admits(policy.models, model) === "ok")

export const clientRefusal = (policy: ProviderPolicy, client: string): PolicyRefusal | undefined =>
  admits(policy.clients, client) === "ok"
    ? undefined
    : refuse("client_denied", `client ${client} is not allowed by this organization's policy`)

/** Several names for one thing (an MCP server's name and URL): any denied name denies; any allowed name allows. */
const admitsAny = (list: KindList, names: ReadonlyArray<string>) => {
  if (names.some((name) => list.deny.has(name))) return "denied"
  if (list.allow.size > 0 && !names.some((name) => list.allow.has(name))) return "not_allowed"
  return "ok"
}

const namesOf = (ref: McpServerRef | SkillRef): Array<string> =>
  ("url" in ref ? [ref.name, ref.url] : [ref.id, ref.name]).filter((n): n is string => n !== undefined)

export interface CapabilityResult {
  /** The body with stripped tools and MCP servers removed; undefined when nothing was stripped. */
  readonly body: Json | undefined
  readonly stripped: ReadonlyArray<Stripped>
  /** What was stripped, as removals from the client's bytes (src/guardrails/JsonSplice.ts). */
  readonly removals: ReadonlyArray<Removal>
}

/**
 * Tools, MCP servers and skills: strip first (what is stripped is not judged
 * further), then deny / allowlist over what remains. A stripped tool the
 * conversation already called is refused instead: removing it would orphan
 * that call.
 */
export const capabilityCheck = (
  policy: ProviderPolicy,
  surface: Surface,
  body: Json
): PolicyRefusal | CapabilityResult => {
  const strip = stripDeclared(surface, body, policy.tools.strip, policy.mcp.strip)
  if (strip.stripped.length > 0) {
    const history = historyOf(surface, body)
    for (const removed of strip.stripped) {
      if (removed.kind === "tool" && history.tools.has(removed.name)) {
        return refuse("tool_denied", `tool ${removed.name} is stripped by policy but was already used in this conversation`)
      }
      if (removed.kind === "mcp" && history.mcpServers.has(removed.name)) {
        return refuse(
          "tool_denied",
          `tools of MCP server ${removed.name} are stripped by policy but were already used in this conversation`
        )
      }
    }
  }
  const declared = declaredOf(surface, strip.body ?? body)
  for (const tool of declared.tools) {
    const admission = admits(policy.tools, tool)
    if (admission === "denied") return refuse("tool_denied", `tool ${tool} is denied by this organization's policy`)
    if (admission === "not_allowed") return refuse("tool_denied", `tool ${tool} is not in this organization's tool allowlist`)
  }
  for (const server of declared.mcpServers) {
    if (admitsAny(policy.mcp, namesOf(server)) !== "ok") {
      return refuse("mcp_denied", `MCP server ${server.name ?? server.url ?? "(unnamed)"} is not allowed by this organization's policy`)
    }
  }
  for (const skill of declared.skills) {
    if (admitsAny(policy.skills, namesOf(skill)) !== "ok") {
      return refuse("skill_denied", `skill ${skill.id ?? skill.name ?? "(unnamed)"} is not allowed by this organization's policy`)
    }
  }
  return strip
}
