import { Config, Context, type Duration, Effect, Layer } from "effect"
import type { Surface } from "../../schema/GatewayRequest.ts"
import type {
  GuardrailCheck,
  GuardrailError,
  GuardrailRule,
  GuardrailRulePatch,
  GuardrailsUnavailable,
  NewGuardrailRule
} from "../../schema/GuardrailRule.ts"
import { keyCacheTtl } from "../cache/KeyCacheTtl.ts"
import { Invalidation } from "../db/Invalidation.ts"
import { makeGuardrailEngine } from "./GuardrailEngine.ts"
import type { DelimiterIntegrityRule, GuardrailOutcome } from "./GuardrailOutcome.ts"
import { type GuardrailStore, memoryGuardrailStore, sqlGuardrailStore } from "./GuardrailStore.ts"
import { makeRuleBook } from "./RuleBook.ts"
import { makeRuleCache } from "./RuleCache.ts"

/**
 * The guardrail engine: an organization's RE2 rules, compiled once per
 * rule-set version and run over every text segment of a request (system
 * prompts, message text, tool results; never the arguments a model generated
 * for a tool call).
 */
export class Guardrails extends Context.Service<Guardrails, {
  /**
   * Runs the organization's enabled rules over the request's text segments.
   * `parsed` is `JSON.parse` of `body`. With `VDB_GATEWAY_FAIL_OPEN=true` an
   * unavailable rule store yields `allow` (with `failedOpen`) instead of failing.
   */
  evaluate(
    orgUuid: string,
    surface: Surface,
    body: Uint8Array,
    parsed: unknown
  ): Effect.Effect<GuardrailOutcome, GuardrailsUnavailable>
  /** Dry run over one text (`gateway check`, MCP): changes nothing. */
  check(orgUuid: string, text: string): Effect.Effect<GuardrailCheck, GuardrailsUnavailable | GuardrailError>
  /**
   * The enabled `delimiter_integrity` rules in priority order (the sealed-block
   * step applies the first); none when fail-open and the rules cannot be loaded.
   */
  delimiterIntegrity(orgUuid: string): Effect.Effect<ReadonlyArray<DelimiterIntegrityRule>, GuardrailsUnavailable>

  list(orgUuid: string): Effect.Effect<ReadonlyArray<GuardrailRule>, GuardrailError>
  show(orgUuid: string, uuid: string): Effect.Effect<GuardrailRule, GuardrailError>
  /** Refuses a pattern RE2 does not compile (400 with the compiler's message). */
  create(orgUuid: string, input: NewGuardrailRule): Effect.Effect<GuardrailRule, GuardrailError>
  update(orgUuid: string, uuid: string, patch: GuardrailRulePatch): Effect.Effect<GuardrailRule, GuardrailError>
  setEnabled(orgUuid: string, uuid: string, enabled: boolean): Effect.Effect<GuardrailRule, GuardrailError>
  remove(orgUuid: string, uuid: string): Effect.Effect<void, GuardrailError>
  /**
   * Marks this process's compiled rules for the organization stale, so the next
   * request re-reads the rule-set version (the invalidation bus calls it).
   */
  invalidate(orgUuid: string): Effect.Effect<void>
}>()("vdb/guardrails/Guardrails") {
  /** Rules in PostgreSQL / PGlite; changes reach every process through the invalidation bus. */
  static readonly layer = Layer.effect(
    Guardrails,
    Effect.flatMap(sqlGuardrailStore, (store) => makeGuardrails({ store }))
  )

  /** Rules in memory (unit tests; the gateway wired without a database). */
  static readonly layerMemory = Layer.effect(
    Guardrails,
    Effect.suspend(() => makeGuardrails({ store: memoryGuardrailStore() }))
  )
}

/** `VDB_GATEWAY_FAIL_OPEN=true`: guardrails (only) pass a request when their rules cannot be loaded. */
export const failOpenConfig: Config.Config<boolean> = Config.Boolean("VDB_GATEWAY_FAIL_OPEN").pipe(
  Config.withDefault(false)
)

/**
 * Builds the service over a store. The TTL (`VDB_GATEWAY_KEY_CACHE_TTL`,
 * shared with the gateway's other caches) only bounds how long a lost
 * invalidation can leave a process on an older rule set.
 */
export const makeGuardrails = Effect.fnUntraced(function*(options: {
  readonly store: GuardrailStore
  readonly ttl?: Duration.Duration | undefined
  readonly failOpen?: boolean | undefined
}) {
  const bus = yield* Invalidation
  const cache = makeRuleCache({ store: options.store, ttl: options.ttl ?? (yield* keyCacheTtl), live: bus.live })
  yield* bus.subscribe(
    "guardrail-rules",
    (event) => event._tag === "All" ? cache.invalidateAll : cache.invalidate(event.key)
  )
  const engine = makeGuardrailEngine({ cache, failOpen: options.failOpen ?? (yield* failOpenConfig) })
  // `publish` evicts this process's entry before it returns, then tells the other processes.
  const book = makeRuleBook({ store: options.store, changed: (orgUuid) => bus.publish("guardrail-rules", orgUuid) })
  return Guardrails.of({ ...engine, ...book, invalidate: cache.invalidate })
})
