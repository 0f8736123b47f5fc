import type { Surface } from "../../schema/GatewayRequest.ts"
import { PolicyRefusal } from "../../schema/PolicyRefusal.ts"
import type { Removal } from "../guardrails/JsonSplice.ts"
import { declaredOf, historyOf, type McpServerRef, type SkillRef } from "./DeclaredCapabilities.ts"
import { canonicalMcpUrl } from "./McpServerUrl.ts"
import { type ModelRef, modelReferencesOf } from "./ModelReferences.ts"
import { type Admission, admits, type KindList, type PolicySnapshot, type ProviderPolicy } from "./PolicySnapshot.ts"
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

export const modelRefusal = (policy: ProviderPolicy, slug: string, model: string): PolicyRefusal | undefined =>
  refusalOfModel(policy, slug, { name: model, at: "", pattern: false })

/**
 * A model name with a variant suffix (OpenRouter's `openai/gpt-4o:nitro`, `:free`, `:online`; a
 * version tag) is served by its base model: the base's entries apply to it too.
 */
const baseOf = (name: string): string | undefined => {
  const colon = name.indexOf(":", name.lastIndexOf("/") + 1)
  return colon > name.lastIndexOf("/") + 1 ? name.slice(0, colon) : undefined
}

const globOf = (pattern: string) =>
  new RegExp(`^${pattern.split("*").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`)

/**
 * Deny wins; in allowlist mode the name or its base must be listed. A router's pattern is denied
 * when it matches a denied model, and in allowlist mode must itself be listed: it lets the router
 * pick any model it matches.
 */
const admitsModel = (list: KindList, ref: ModelRef): Admission => {
  if (ref.pattern) {
    const glob = globOf(ref.name)
    const base = baseOf(ref.name)
    // A denied model, or one of its variants (`openai/gpt-4o:*`).
    if ([...list.deny].some((denied) => glob.test(denied) || glob.test(`${denied}:`))) return "denied"
    if (base !== undefined && list.deny.has(base)) return "denied"
    return list.allow.size > 0 && !list.allow.has(ref.name) ? "not_allowed" : "ok"
  }
  const base = baseOf(ref.name)
  if (base === undefined) return admits(list, ref.name)
  if (list.deny.has(ref.name) || list.deny.has(base)) return "denied"
  return list.allow.size > 0 && !list.allow.has(ref.name) && !list.allow.has(base) ? "not_allowed" : "ok"
}

const refusalOfModel = (policy: ProviderPolicy, slug: string, ref: ModelRef): PolicyRefusal | undefined => {
  const where = ref.at === "" ? "" : ` (named in ${ref.at})`
  switch (admitsModel(policy.models, ref)) {
    case "denied":
      return refuse("model_denied", `model ${ref.name}${where} is denied for provider ${slug}`)
    case "not_allowed":
      return refuse("model_not_allowed", `model ${ref.name}${where} is not in the allowlist for provider ${slug}`)
    case "ok":
      return undefined
  }
}

/**
 * Every model the body names (ModelReferences.ts), the request's own first;
 * the first refused one refuses the request. A model-naming field the
 * gateway can't read is refused too: the provider might read a denied model
 * in it.
 */
export const modelsRefusal = (
  policy: ProviderPolicy,
  slug: string,
  surface: Surface,
  body: Json,
  model: string
): PolicyRefusal | undefined => {
  if (policy.models.allow.size === 0 && policy.models.deny.size === 0) return undefined
  const reading = modelReferencesOf(surface, body, model)
  if (reading._tag === "Malformed") {
    return refuse(
      "request_uninspectable",
      `${reading.at} must be ${reading.expected}: the model policy cannot judge it otherwise`
    )
  }
  // A model the provider picks could be any: refused as a denied one (or, with an allowlist only, an unlisted one).
  const picksItself = (detail: string) =>
    refuse(policy.models.deny.size > 0 ? "model_denied" : "model_not_allowed", detail)
  if (reading.providerPicks !== undefined) {
    return picksItself(
      `with ${reading.providerPicks} the provider picks a model itself, which the model policy for provider ${slug} ` +
        "cannot judge: name the fallback models in fallbacks[]"
    )
  }
  for (const ref of reading.refs) {
    const refused = refusalOfModel(policy, slug, ref)
    if (refused !== undefined) return refused
    if (!reading.routerConstrained && ROUTERS.has(baseOf(ref.name) ?? ref.name)) {
      return picksItself(
        `model ${ref.name} picks a model itself, which the model policy for provider ${slug} cannot judge: ` +
          "name the models it may pick in the auto-router plugin's allowed_models"
      )
    }
  }
  return undefined
}

/**
 * Routers that pick among every model the provider serves unless told which (OpenRouter's auto
 * router reads `plugins[{id:"auto-router", allowed_models}]`).
 */
const ROUTERS: ReadonlySet<string> = new Set(["openrouter/auto"])

/** The catalog models an organization may see. */
export const visibleModels = (policy: ProviderPolicy, models: ReadonlyArray<string>): ReadonlyArray<string> =>
  policy.models.allow.size === 0 && policy.models.deny.size === 0
    ? models
    : models.filter((model) => admits(policy.models, model) === "ok")

export const clientRefusal = (policy: ProviderPolicy, client: string): PolicyRefusal | undefined =>
  admits(policy.clients, client) === "ok"
    ? undefined
    : refuse("client_denied", `client ${client} is not allowed by this organization's policy`)

/** Several names for one thing (a skill's id and name): any denied name denies; any allowed name allows. */
const admitsAny = (list: KindList, names: ReadonlyArray<string>) => {
  if (names.some((name) => list.deny.has(name))) return "denied"
  if (list.allow.size > 0 && !names.some((name) => list.allow.has(name))) return "not_allowed"
  return "ok"
}

const namesOf = (ref: SkillRef): Array<string> => [ref.id, ref.name].filter((n): n is string => n !== undefined)

const hasEntries = (list: KindList) => list.allow.size > 0 || list.deny.size > 0 || list.strip.size > 0

/**
 * An MCP server, by its name and its URL compared in canonical form
 * (McpServerUrl.ts). A URL that does not parse is refused whenever the
 * organization has MCP entries: it could be any server. When the allowlist
 * names URLs, a server with a URL is admitted by its URL only.
 */
const mcpServerRefusal = (policy: ProviderPolicy, server: McpServerRef): PolicyRefusal | undefined => {
  const url = server.url === undefined ? undefined : canonicalMcpUrl(server.url)
  // Never the URL as sent: its query or user information may hold a credential.
  const label = server.name ?? url ?? "(unnamed)"
  if (server.badUrl || (server.url !== undefined && url === undefined)) {
    return refuse(
      "mcp_denied",
      `MCP server ${server.name ?? "(unnamed)"} has a URL that is not an http or https URL the gateway can parse`
    )
  }
  const { mcp } = policy
  const denied = (server.name !== undefined && mcp.deny.has(server.name)) || (url !== undefined && mcp.deny.has(url))
  const allowed = mcp.allow.size === 0 ||
    (url !== undefined && mcp.allow.has(url)) ||
    (server.name !== undefined && mcp.allow.has(server.name) && !(url !== undefined && policy.mcpAllowsByUrl))
  if (denied || !allowed) {
    return refuse("mcp_denied", `MCP server ${label} is not allowed by this organization's policy`)
  }
  return undefined
}

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
        return refuse(
          "tool_denied",
          `tool ${removed.name} is stripped by policy but was already used in this conversation`
        )
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
    if (admission === "not_allowed") {
      return refuse("tool_denied", `tool ${tool} is not in this organization's tool allowlist`)
    }
  }
  if (hasEntries(policy.mcp)) {
    for (const server of declared.mcpServers) {
      const refused = mcpServerRefusal(policy, server)
      if (refused !== undefined) return refused
    }
  }
  for (const skill of declared.skills) {
    if (admitsAny(policy.skills, namesOf(skill)) !== "ok") {
      return refuse(
        "skill_denied",
        `skill ${skill.id ?? skill.name ?? "(unnamed)"} is not allowed by this organization's policy`
      )
    }
  }
  return strip
}
