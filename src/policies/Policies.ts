import { Context, Duration, Effect, Layer } from "effect"
import {
  type GatewayPolicyEntry,
  type NewPolicyEntry,
  PolicyEntryInvalid,
  PolicyEntryNotFound,
  PolicyError,
  STRIPPABLE_KINDS
} from "../../schema/GatewayPolicy.ts"
import { UNPRINTABLE } from "../../schema/PrintableText.ts"
import { makeBackendCache } from "../cache/BackendCache.ts"
import { BackendUnavailable } from "../cache/BackendUnavailable.ts"
import { keyCacheTtl } from "../cache/KeyCacheTtl.ts"
import { Invalidation } from "../db/Invalidation.ts"
import type { InvalidationBus } from "../db/InvalidationBus.ts"
import { canonicalMcpUrl, looksLikeUrl } from "./McpServerUrl.ts"
import { compileSnapshot, normalise, type PolicySnapshot } from "./PolicySnapshot.ts"
import { memoryPolicyStore, type PolicyEntryInput, type PolicyStore, sqlPolicyStore } from "./PolicyStore.ts"

export type { PolicySnapshot } from "./PolicySnapshot.ts"

/**
 * An organization's gateway policy: allow / deny entries for providers,
 * models (per provider), tools, MCP servers, skills and clients, and strip
 * entries for tools and MCP servers (spec 2, Guardrail behavior 6-8).
 *
 * The request path reads a compiled `PolicySnapshot` per organization,
 * cached per process. Every write publishes the organization on the
 * invalidation bus (`gateway-policies`), so every process drops its snapshot
 * at once; `VDB_GATEWAY_KEY_CACHE_TTL` (at most 60 s) only bounds how long a
 * lost notification can leave a process on an older version.
 */
export class Policies extends Context.Service<Policies, {
  add(orgUuid: string, entry: NewPolicyEntry): Effect.Effect<GatewayPolicyEntry, PolicyError>
  list(orgUuid: string): Effect.Effect<ReadonlyArray<GatewayPolicyEntry>, PolicyError>
  remove(orgUuid: string, uuid: string): Effect.Effect<void, PolicyError>
  /** The compiled policy; fails with `BackendUnavailable` (503, never a pass) when it cannot be read. */
  snapshot(orgUuid: string): Effect.Effect<PolicySnapshot, BackendUnavailable>
  /** Drops this process's snapshot for the organization. */
  invalidate(orgUuid: string): Effect.Effect<void>
}>()("vdb/policies/Policies") {
  static readonly make = Effect.fnUntraced(function*(store: PolicyStore, ttl: Duration.Duration, bus: InvalidationBus) {
    const unavailable = new BackendUnavailable({ backend: "policy" })

    const readSnapshot = (orgUuid: string): Effect.Effect<PolicySnapshot, unknown> =>
      store.read(orgUuid).pipe(
        Effect.map(({ entries, version }) =>
          compileSnapshot(
            version,
            entries.map((e) => ({ kind: e.kind, effect: e.effect, provider: e.provider ?? "", value: e.value }))
          )
        )
      )

    const cache = yield* makeBackendCache({
      what: "policy",
      read: readSnapshot,
      unavailable,
      ttl,
      bus,
      channels: ["gateway-policies"]
    })
    const changed = (orgUuid: string) => bus.publish("gateway-policies", orgUuid)

    const org = (raw: string) =>
      UUID.test(raw.trim()) ? Effect.succeed(raw.trim().toLowerCase()) : invalid(`not a UUID: ${JSON.stringify(raw)}`)

    const add = Effect.fn("Policies.add")(function*(orgUuid: string, entry: NewPolicyEntry) {
      const uuid = yield* org(orgUuid)
      const input = yield* validEntry(entry)
      const stored = yield* store.insert(uuid, input)
      yield* changed(uuid)
      return stored
    })

    const list = Effect.fn("Policies.list")(function*(orgUuid: string) {
      return (yield* store.read(yield* org(orgUuid))).entries
    })

    const remove = Effect.fn("Policies.remove")(function*(orgUuid: string, entryUuid: string) {
      const uuid = yield* org(orgUuid)
      if (!UUID.test(entryUuid)) return yield* notFound(entryUuid)
      const removed = yield* store.remove(uuid, entryUuid.toLowerCase())
      if (removed) yield* changed(uuid)
      if (!removed) return yield* notFound(entryUuid)
    })

    const snapshot = (orgUuid: string) => cache.get(orgUuid.toLowerCase())

    const invalidate = (orgUuid: string) => cache.invalidate(orgUuid.toLowerCase())

    return Policies.of({ add, list, remove, snapshot, invalidate })
  })

  static readonly layer = Layer.effect(Policies)(Effect.gen(function*() {
    return yield* Policies.make(yield* sqlPolicyStore, yield* keyCacheTtl, yield* Invalidation)
  }))

  static readonly layerMemory = Layer.effect(Policies)(Effect.gen(function*() {
    return yield* Policies.make(memoryPolicyStore(), yield* keyCacheTtl, yield* Invalidation)
  }))
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/

const invalid = (reason: string) => Effect.fail(new PolicyError({ reason: new PolicyEntryInvalid({ reason }) }))
const notFound = (uuid: string) => Effect.fail(new PolicyError({ reason: new PolicyEntryNotFound({ uuid }) }))

const scopeOf = (entry: NewPolicyEntry) => (entry.provider ?? "").trim().toLowerCase()

/**
 * The provider slugs an entry names (a `provider` entry's value, any entry's scope), as stored.
 * Each must be a provider of the organization, or the entry never applies (a typo like `opnai` is
 * stored and silently ignored). Whether a slug is one of the organization's custom providers is the
 * caller's to ask, before `add`; what is not even slug-shaped is left to `add`'s own refusal.
 */
export const providersNamed = (entry: NewPolicyEntry): ReadonlyArray<string> =>
  [entry.kind === "provider" ? normalise(entry.kind, entry.value) : "", scopeOf(entry)].filter((slug) =>
    SLUG.test(slug)
  )

const validEntry = (entry: NewPolicyEntry): Effect.Effect<PolicyEntryInput, PolicyError> => {
  const value = normalise(entry.kind, entry.value)
  const provider = scopeOf(entry)
  if (value === "" || value.length > 512) return invalid("the value must be 1 to 512 characters")
  if (UNPRINTABLE.test(value)) {
    return invalid(
      "the value must not contain control characters (U+0000 to U+001F, U+007F to U+009F), line separators or bidirectional overrides"
    )
  }
  if (entry.effect === "strip" && !STRIPPABLE_KINDS.includes(entry.kind)) {
    return invalid(`strip applies to tools and MCP servers, not to ${entry.kind}`)
  }
  if (entry.kind === "provider") {
    if (provider !== "") return invalid("a provider entry names the provider as its value, not with --provider")
    if (!SLUG.test(value)) return invalid(`not a provider slug: ${JSON.stringify(value)}`)
  }
  if (entry.kind === "model" && provider === "") return invalid("a model entry needs the provider it applies to")
  // Compared in canonical form (McpServerUrl.ts): a URL that does not parse would match nothing, silently.
  if (entry.kind === "mcp" && looksLikeUrl(value) && canonicalMcpUrl(value) === undefined) {
    return invalid("an MCP server URL must be an http or https URL the WHATWG URL parser accepts")
  }
  if (provider !== "" && !SLUG.test(provider)) return invalid(`not a provider slug: ${JSON.stringify(provider)}`)
  return Effect.succeed({ kind: entry.kind, effect: entry.effect, provider, value })
}
