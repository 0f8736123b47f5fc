import { Cause, Clock, Deferred, Duration, Effect, Exit } from "effect"
import { GuardrailsUnavailable } from "../../schema/GuardrailRule.ts"
import { type CompiledRuleSet, compileRuleSet } from "./CompiledRules.ts"
import type { GuardrailStore } from "./GuardrailStore.ts"

/** A store read slower than this counts as unreachable. */
const STORE_TIMEOUT = Duration.seconds(5)
/** Organizations whose compiled rules one process keeps; the oldest entry goes first. */
const CAPACITY = 10_000

interface Entry {
  readonly ruleSet: CompiledRuleSet
  /** When the version was last confirmed; `-Infinity` once an invalidation marked it stale. */
  checkedAt: number
}

const unavailable = new GuardrailsUnavailable()

/**
 * Each organization's compiled rule set, keyed by its rule-set version.
 * Patterns are compiled once per version: a process re-reads only the
 * version (one small row) after an invalidation or once the TTL has passed,
 * and recompiles only when it changed. The invalidation bus makes changes
 * immediate; the TTL is the fallback for a lost notification.
 *
 * A stale entry is still used when the store cannot be reached: only a cold
 * cache fails (`GuardrailsUnavailable`, 503 unless fail-open).
 */
export const makeRuleCache = (options: {
  readonly store: GuardrailStore
  readonly ttl: Duration.Duration
  /** Whether the invalidation bus hears every change now; when not, each request re-reads the version. */
  readonly live?: (() => boolean) | undefined
}) => {
  const live = options.live ?? (() => true)
  const { store } = options
  const ttlMillis = Duration.toMillis(options.ttl)
  const entries = new Map<string, Entry>()
  const loading = new Map<string, Deferred.Deferred<CompiledRuleSet, GuardrailsUnavailable>>()

  const load = (orgUuid: string, held: Entry | undefined) =>
    Effect.gen(function*() {
      const version = yield* store.version(orgUuid)
      if (held !== undefined && held.ruleSet.version === version) return held.ruleSet
      // Version first, rules second: a write in between leaves newer rules under the older
      // version, which the next check corrects; never older rules under a newer version.
      return compileRuleSet(yield* store.list(orgUuid), version)
    }).pipe(
      Effect.timeout(STORE_TIMEOUT),
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.failCause(cause as Cause.Cause<never>)
          : Effect.logWarning("guardrail rule store unavailable").pipe(
            Effect.annotateLogs("failure", String(Cause.squash(cause))),
            Effect.andThen(held === undefined ? Effect.fail(unavailable) : Effect.succeed(held.ruleSet))
          )
      )
    )

  const store_ = (orgUuid: string, ruleSet: CompiledRuleSet, now: number) => {
    entries.delete(orgUuid)
    if (entries.size >= CAPACITY) entries.delete(entries.keys().next().value!)
    entries.set(orgUuid, { ruleSet, checkedAt: now })
  }

  const refresh = (orgUuid: string, held: Entry | undefined) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        const pending = loading.get(orgUuid)
        if (pending !== undefined) return yield* restore(Deferred.await(pending))
        const deferred = yield* Deferred.make<CompiledRuleSet, GuardrailsUnavailable>()
        loading.set(orgUuid, deferred)
        const exit = yield* Effect.exit(restore(load(orgUuid, held)))
        loading.delete(orgUuid)
        if (Exit.isSuccess(exit)) store_(orgUuid, exit.value, yield* Clock.currentTimeMillis)
        yield* Deferred.done(deferred, exit)
        return yield* exit
      })
    )

  const get = (orgUuid: string): Effect.Effect<CompiledRuleSet, GuardrailsUnavailable> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const held = entries.get(orgUuid)
      return held !== undefined && now - held.checkedAt < ttlMillis && live()
        ? Effect.succeed(held.ruleSet)
        : refresh(orgUuid, held)
    })

  /** Marks the organization's entry stale: the next request re-reads the version. */
  const invalidate = (orgUuid: string) =>
    Effect.sync(() => {
      const held = entries.get(orgUuid)
      if (held !== undefined) held.checkedAt = -Infinity
    })

  const invalidateAll = Effect.sync(() => {
    for (const entry of entries.values()) entry.checkedAt = -Infinity
  })

  return { get, invalidate, invalidateAll }
}

export type RuleCache = ReturnType<typeof makeRuleCache>
