import type { PolicyEffect, PolicyKind } from "../../schema/GatewayPolicy.ts"
import { canonicalMcpEntry, looksLikeUrl } from "./McpServerUrl.ts"

/** One stored entry as the evaluator sees it; `provider` is "" for every provider. */
export interface PolicyEntryView {
  readonly kind: PolicyKind
  readonly effect: PolicyEffect
  readonly provider: string
  readonly value: string
}

/** The entries of one kind that apply to one provider. Any allow entry puts the kind in allowlist mode. */
export interface KindList {
  readonly allow: ReadonlySet<string>
  readonly deny: ReadonlySet<string>
  readonly strip: ReadonlySet<string>
}

/** Everything that applies to requests for one provider: its own entries merged with the organization-wide ones. */
export interface ProviderPolicy {
  readonly models: KindList
  readonly tools: KindList
  readonly mcp: KindList
  readonly skills: KindList
  readonly clients: KindList
  /**
   * The MCP allowlist names URLs: a server that declares a URL must then be
   * allowed by it, not by the name the client gave it (a label is the client's to choose).
   */
  readonly mcpAllowsByUrl: boolean
  /** True when nothing but provider entries exist: the request path can skip the body walks. */
  readonly empty: boolean
}

/**
 * An organization's compiled policy at one version. Built once per version
 * (on a cache miss), then only read: lookups are set membership.
 */
export interface PolicySnapshot {
  readonly version: number
  readonly providers: KindList
  forProvider(slug: string): ProviderPolicy
}

export type Admission = "ok" | "denied" | "not_allowed"

/** Deny wins; with any allow entry, only listed values pass. */
export const admits = (list: KindList, value: string): Admission =>
  list.deny.has(value) ? "denied" : list.allow.size > 0 && !list.allow.has(value) ? "not_allowed" : "ok"

/** Provider slugs and client names are case-insensitive; every other value is compared verbatim. */
export const normalise = (kind: PolicyKind, value: string): string =>
  kind === "provider" || kind === "client" ? value.trim().toLowerCase() : value.trim()

const emptyList: KindList = { allow: new Set(), deny: new Set(), strip: new Set() }

interface MutableList {
  readonly allow: Set<string>
  readonly deny: Set<string>
  readonly strip: Set<string>
}

const newList = (): MutableList => ({ allow: new Set(), deny: new Set(), strip: new Set() })

const isEmpty = (list: KindList) => list.allow.size === 0 && list.deny.size === 0 && list.strip.size === 0

type ScopedKind = Exclude<PolicyKind, "provider">
const SCOPED_KINDS: ReadonlyArray<ScopedKind> = ["model", "tool", "mcp", "skill", "client"]

export const compileSnapshot = (version: number, entries: ReadonlyArray<PolicyEntryView>): PolicySnapshot => {
  const providers = newList()
  // scope ("" or a slug) -> kind -> list
  const scoped = new Map<string, Map<ScopedKind, MutableList>>()
  for (const entry of entries) {
    // MCP server URLs are compared in their canonical form (McpServerUrl.ts), computed here once per version.
    const value = entry.kind === "mcp"
      ? canonicalMcpEntry(normalise(entry.kind, entry.value))
      : normalise(entry.kind, entry.value)
    if (entry.kind === "provider") {
      providers[entry.effect].add(value)
      continue
    }
    let kinds = scoped.get(entry.provider)
    if (kinds === undefined) scoped.set(entry.provider, kinds = new Map())
    let list = kinds.get(entry.kind)
    if (list === undefined) kinds.set(entry.kind, list = newList())
    list[entry.effect].add(value)
  }

  const merged = (slug: string, kind: ScopedKind): KindList => {
    const global = scoped.get("")?.get(kind)
    const own = slug === "" ? undefined : scoped.get(slug)?.get(kind)
    if (own === undefined) return global ?? emptyList
    if (global === undefined) return own
    return {
      allow: new Set([...global.allow, ...own.allow]),
      deny: new Set([...global.deny, ...own.deny]),
      strip: new Set([...global.strip, ...own.strip])
    }
  }

  const perProvider = new Map<string, ProviderPolicy>()
  const forProvider = (slug: string): ProviderPolicy => {
    const known = perProvider.get(slug)
    if (known !== undefined) return known
    const [models, tools, mcp, skills, clients] = SCOPED_KINDS.map((kind) => merged(slug, kind)) as [
      KindList,
      KindList,
      KindList,
      KindList,
      KindList
    ]
    const policy: ProviderPolicy = {
      models,
      tools,
      mcp,
      skills,
      clients,
      mcpAllowsByUrl: [...mcp.allow].some(looksLikeUrl),
      empty: isEmpty(models) && isEmpty(tools) && isEmpty(mcp) && isEmpty(skills) && isEmpty(clients)
    }
    perProvider.set(slug, policy)
    return policy
  }

  return { version, providers, forProvider }
}
