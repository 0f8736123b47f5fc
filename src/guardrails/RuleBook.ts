import { Clock, DateTime, Effect } from "effect"
import { randomUUID } from "node:crypto"
import {
  DEFAULT_PRIORITY,
  defaultActionOf,
  GuardrailError,
  GuardrailRule,
  GuardrailRuleInvalid,
  GuardrailRuleNotFound,
  type GuardrailRulePatch,
  type NewGuardrailRule
} from "../../schema/GuardrailRule.ts"
import { UNPRINTABLE } from "../../schema/PrintableText.ts"
import {
  MAX_RULES_PER_ORG,
  patternError,
  patternLimitError,
  ruleSetBudgetError,
  type StoredRule
} from "./CompiledRules.ts"
import type { GuardrailStore } from "./GuardrailStore.ts"

/**
 * Managing an organization's rules (the management API and CLI call these).
 * Every write tells `changed`, which evicts this process's compiled rules and
 * publishes the change to the others.
 */
export const makeRuleBook = (options: {
  readonly store: GuardrailStore
  readonly changed: (orgUuid: string) => Effect.Effect<void>
}) => {
  const { changed, store } = options

  const found = Effect.fnUntraced(function*(orgUuid: string, uuid: string) {
    const org = yield* validUuid(orgUuid, "organization")
    const id = yield* validUuid(uuid, "rule")
    const rule = yield* store.find(org, id)
    if (rule === undefined) return yield* new GuardrailError({ reason: new GuardrailRuleNotFound({ uuid: id }) })
    return rule
  })

  const list = Effect.fn("Guardrails.list")(function*(orgUuid: string) {
    const org = yield* validUuid(orgUuid, "organization")
    return (yield* store.list(org)).map(toGuardrailRule)
  })

  const show = Effect.fn("Guardrails.show")(function*(orgUuid: string, uuid: string) {
    return toGuardrailRule(yield* found(orgUuid, uuid))
  })

  const create = Effect.fn("Guardrails.create")(function*(orgUuid: string, input: NewGuardrailRule) {
    const org = yield* validUuid(orgUuid, "organization")
    const now = new Date(yield* Clock.currentTimeMillis)
    const rule: StoredRule = {
      uuid: randomUUID(),
      org_uuid: org,
      name: input.name.trim(),
      rule_type: input.rule_type,
      action: input.action ?? defaultActionOf[input.rule_type],
      priority: input.priority ?? DEFAULT_PRIORITY,
      enabled: input.enabled ?? true,
      pattern: input.pattern ?? null,
      created_at: now,
      updated_at: now
    }
    yield* validRule(rule, undefined)
    yield* store.exclusive(
      org,
      Effect.gen(function*() {
        const rules = yield* store.list(org)
        if (rules.length >= MAX_RULES_PER_ORG) {
          return yield* invalid(`an organization has at most ${MAX_RULES_PER_ORG} guardrail rules`)
        }
        yield* uniqueName(rules, rule)
        yield* withinBudget(rules, rule)
        yield* store.insert(rule)
      })
    )
    yield* changed(org)
    return toGuardrailRule(rule)
  })

  const update = Effect.fn("Guardrails.update")(function*(orgUuid: string, uuid: string, patch: GuardrailRulePatch) {
    const org = yield* validUuid(orgUuid, "organization")
    const rule = yield* store.exclusive(org, updated(org, uuid, patch))
    yield* changed(rule.org_uuid)
    return toGuardrailRule(rule)
  })

  // Read and written under the organization's lock, so the name and budget checks see every rule
  // the write will stand beside (a rename racing another is the named 400, not the constraint's 500).
  const updated = Effect.fnUntraced(function*(orgUuid: string, uuid: string, patch: GuardrailRulePatch) {
    const current = yield* found(orgUuid, uuid)
    const rule: StoredRule = {
      ...current,
      name: patch.name?.trim() ?? current.name,
      action: patch.action ?? current.action,
      priority: patch.priority ?? current.priority,
      enabled: patch.enabled ?? current.enabled,
      pattern: patch.pattern !== undefined ? patch.pattern : current.pattern,
      updated_at: new Date(yield* Clock.currentTimeMillis)
    }
    yield* validRule(rule, current)
    const newPattern = rule.pattern !== current.pattern
    if (rule.name !== current.name || newPattern) {
      const rules = yield* store.list(current.org_uuid)
      if (rule.name !== current.name) yield* uniqueName(rules, rule)
      if (newPattern) yield* withinBudget(rules, rule)
    }
    yield* stored(rule)
    return rule
  })

  /** Writes a changed rule; one removed since it was read is not found, not reported changed. */
  const stored = (rule: StoredRule) =>
    Effect.flatMap(
      store.update(rule),
      (present) =>
        present
          ? Effect.void
          : Effect.fail(new GuardrailError({ reason: new GuardrailRuleNotFound({ uuid: rule.uuid }) }))
    )

  // Under the lock too: the whole rule is written back, so a change made between the read and the
  // write (a rename, a new priority) would be lost.
  const setEnabled = Effect.fn("Guardrails.setEnabled")(function*(orgUuid: string, uuid: string, enabled: boolean) {
    const org = yield* validUuid(orgUuid, "organization")
    const rule = yield* store.exclusive(
      org,
      Effect.gen(function*() {
        const current = yield* found(org, uuid)
        const rule: StoredRule = { ...current, enabled, updated_at: new Date(yield* Clock.currentTimeMillis) }
        // Enabling does not re-check the pattern: a stored rule that does not compile stays listed as `compiles: false`.
        yield* stored(rule)
        return rule
      })
    )
    yield* changed(rule.org_uuid)
    return toGuardrailRule(rule)
  })

  // Two removals of one rule at once: the one that removed nothing is not found, as a later one is.
  const remove = Effect.fn("Guardrails.remove")(function*(orgUuid: string, uuid: string) {
    const current = yield* found(orgUuid, uuid)
    if (!(yield* store.remove(current.org_uuid, current.uuid))) {
      return yield* new GuardrailError({ reason: new GuardrailRuleNotFound({ uuid: current.uuid }) })
    }
    yield* changed(current.org_uuid)
  })

  return { list, show, create, update, setEnabled, remove }
}

export const toGuardrailRule = (rule: StoredRule): GuardrailRule =>
  new GuardrailRule({
    ...rule,
    compiles: rule.pattern === null || patternError(rule.pattern) === undefined,
    created_at: DateTime.fromDateUnsafe(rule.created_at),
    updated_at: DateTime.fromDateUnsafe(rule.updated_at)
  })

const uniqueName = (rules: ReadonlyArray<StoredRule>, rule: StoredRule): Effect.Effect<void, GuardrailError> =>
  rules.some((r) => r.name === rule.name && r.uuid !== rule.uuid)
    ? invalid(`a guardrail rule named ${JSON.stringify(rule.name)} already exists`)
    : Effect.void

/** The organization's patterns with `rule` in place of its stored version, compiled together within RE2's budget. */
const withinBudget = (rules: ReadonlyArray<StoredRule>, rule: StoredRule): Effect.Effect<void, GuardrailError> => {
  if (rule.pattern === null) return Effect.void
  const patterns = rules.flatMap((r) =>
    r.uuid === rule.uuid || r.pattern === null || patternError(r.pattern) !== undefined ? [] : [r.pattern]
  )
  const error = ruleSetBudgetError([...patterns, rule.pattern], rule.pattern)
  return error === undefined ? Effect.void : invalid(error)
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const invalid = (reason: string) => Effect.fail(new GuardrailError({ reason: new GuardrailRuleInvalid({ reason }) }))

const validUuid = (raw: string, what: string) =>
  UUID.test(raw.trim()) ? Effect.succeed(raw.trim().toLowerCase()) : invalid(`${what} must be a UUID`)

/**
 * `current` is the stored rule an update changes. The checks added since rules were first stored (printable
 * names, pattern limits) apply to a new or changed value only: a rule stored before them keeps working and
 * can still be disabled or given another priority.
 */
const validRule = (rule: StoredRule, current: StoredRule | undefined): Effect.Effect<void, GuardrailError> => {
  if (rule.name.length === 0 || rule.name.length > 200) return invalid("name must be 1 to 200 characters")
  if (rule.name !== current?.name && (UNPRINTABLE.test(rule.name) || !rule.name.isWellFormed())) {
    return invalid("name must be printable text (no control characters such as NUL, newlines or tabs)")
  }
  if (!Number.isInteger(rule.priority) || Math.abs(rule.priority) > 1_000_000) {
    return invalid("priority must be a whole number between -1000000 and 1000000")
  }
  if (rule.rule_type === "delimiter_integrity") {
    if (rule.pattern !== null) return invalid("a delimiter_integrity rule takes no pattern")
    if (rule.action === "redact") return invalid("a delimiter_integrity rule blocks or flags")
    return Effect.void
  }
  if (rule.pattern === null || rule.pattern === "") return invalid(`a ${rule.rule_type} rule needs a pattern`)
  const limit = rule.pattern !== current?.pattern ? patternLimitError(rule.pattern) : undefined
  if (limit !== undefined) return invalid(limit)
  const error = patternError(rule.pattern)
  // The compiler's own message (it names the offending construct), so the author can fix the pattern.
  return error === undefined ? Effect.void : invalid(`pattern does not compile: ${error}`)
}
