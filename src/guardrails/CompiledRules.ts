import RE2 from "re2"
import type { GuardrailAction, GuardrailRuleType } from "../../schema/GuardrailRule.ts"
import type { DelimiterIntegrityRule } from "./GuardrailOutcome.ts"

type RE2Set = InstanceType<typeof RE2.Set>

/** A rule as stored; `compiles` is derived, never stored. */
export interface StoredRule {
  readonly uuid: string
  readonly org_uuid: string
  readonly name: string
  readonly rule_type: GuardrailRuleType
  readonly action: GuardrailAction
  readonly priority: number
  readonly enabled: boolean
  readonly pattern: string | null
  readonly created_at: Date
  readonly updated_at: Date
}

export interface CompiledRule {
  readonly uuid: string
  readonly name: string
  readonly ruleType: GuardrailRuleType
  readonly action: GuardrailAction
  /** Non-global: `test` keeps no state between calls. */
  readonly test: RE2
  /** Global: every span, for redaction. */
  readonly all: RE2
  /** Global and multi-line: which segments of the joined text hold a match (over-approximates; confirmed by `test`). */
  readonly scan: RE2
  /**
   * The set's one pass runs over the segments joined by newlines, so a
   * pattern anchored to the whole text (`\A`, `\z`, or one that turns
   * multi-line mode off) cannot be pre-screened there; it is tested on each
   * segment instead.
   */
  readonly alwaysTest: boolean
}

/** An organization's enabled rules, compiled for one rule-set version. */
export interface CompiledRuleSet {
  readonly version: string
  /** Pattern rules in evaluation order. Rules whose pattern does not compile are absent. */
  readonly rules: ReadonlyArray<CompiledRule>
  /** One automaton for every pattern (multi-line, so `^`/`$` also match at segment joins); undefined when RE2 refuses the set. */
  readonly set: RE2Set | undefined
  /** The set's pattern index → index in `rules`. */
  readonly setRules: ReadonlyArray<number>
  readonly delimiterIntegrity: ReadonlyArray<DelimiterIntegrityRule>
}

/** `u`: patterns and inputs are Unicode text, as in JavaScript's `u` mode. */
const FLAGS = "u"
/** The set's DFA budget; RE2's default (8 MiB) refuses some sets of 50 realistic patterns. */
const SET_MAX_MEM = 64 * 1024 * 1024

/**
 * Limits on what an organization's rules may cost to compile, checked when a
 * rule is created or its pattern changed (docs/gateway.md, "Limits"). RE2
 * compiles synchronously on the event loop, so one organization's rules
 * must not be able to stall every other tenant: 11 patterns of 140 KB each
 * took 20 s. Rules stored before these limits keep working as they are.
 */
export const MAX_PATTERN_LENGTH = 4096
export const MAX_RULES_PER_ORG = 200
/**
 * RE2's memory budget for an organization's patterns compiled together (the
 * request path's `RE2.Set`); RE2 bounds the program it builds by it and
 * stops early past it, so the check itself stays cheap. Length alone does not
 * bound the program: `[\p{Greek}\p{Han}]{2,5}` alternatives of 4 KB take
 * 35 ms to compile. At 1 MiB the worst full set measured recompiles its
 * `RE2.Set` in about 15 ms, and compiles from cold (three `RE2` per rule as
 * well) in about 75 ms.
 */
export const RULE_SET_MAX_MEM = 1024 * 1024

/** How many compiled patterns (and refusals) the process keeps, and their total source length. */
const CACHE_ENTRIES = 8192
const CACHE_CHARS = 32 * 1024 * 1024

type Compiled = RE2 | Error

/**
 * Compiled patterns keyed by flags and source, shared by every rule set of
 * the process, so a change to one rule (or a rename, an enable) compiles only
 * what changed, and a listing (`compiles`) does not compile at all. A refusal
 * is kept too: RE2 may spend tens of milliseconds before it gives up on a
 * large program. The instances are safe to share: evaluation is synchronous
 * and resets `lastIndex` where it reads it. Least recently used goes first.
 */
const compiledCache = new Map<string, Compiled>()
let cachedChars = 0

const compiled = (pattern: string, flags: string): Compiled => {
  const key = `${flags}:${pattern}`
  const held = compiledCache.get(key)
  if (held !== undefined) {
    compiledCache.delete(key)
    compiledCache.set(key, held)
    return held
  }
  let result: Compiled
  try {
    result = new RE2(pattern, flags)
  } catch (error) {
    result = error instanceof Error ? error : new Error(String(error))
  }
  compiledCache.set(key, result)
  cachedChars += key.length
  while (compiledCache.size > CACHE_ENTRIES || cachedChars > CACHE_CHARS) {
    const oldest = compiledCache.keys().next().value!
    compiledCache.delete(oldest)
    cachedChars -= oldest.length
  }
  return result
}

/** The RE2 compiler's message when `pattern` does not compile, else undefined. */
export const patternError = (pattern: string): string | undefined => {
  const result = compiled(pattern, FLAGS)
  return result instanceof Error ? result.message : undefined
}

/** Why a new or changed pattern is refused, beyond RE2's own syntax check; never quotes the pattern. */
export const patternLimitError = (pattern: string): string | undefined => {
  // PostgreSQL cannot store U+0000 in text: refused here rather than as a database error.
  if (pattern.includes("\0")) return "pattern must not contain a NUL character (U+0000)"
  if (pattern.length > MAX_PATTERN_LENGTH) return `pattern is longer than ${MAX_PATTERN_LENGTH} characters`
  return undefined
}

/**
 * Why an organization's patterns (all its rules, enabled or not: enabling
 * re-checks nothing) are refused together, else undefined. `changed` is the
 * new or changed one, named in the message when it alone is too large.
 */
export const ruleSetBudgetError = (patterns: ReadonlyArray<string>, changed: string): string | undefined => {
  const fits = (sources: ReadonlyArray<string>) => {
    try {
      new RE2.Set(sources, FLAGS + "m", { maxMem: RULE_SET_MAX_MEM })
      return true
    } catch {
      return false
    }
  }
  if (fits(patterns)) return undefined
  const budget = `${RULE_SET_MAX_MEM / 1024 / 1024} MiB`
  return fits([changed])
    ? `the organization's patterns together compile to more than RE2's ${budget} budget; shorten or remove some`
    : `pattern compiles to more than RE2's ${budget} budget (large repeats, alternations or Unicode classes); simplify it`
}

/** Priority first (lower runs first); ties in creation order, then by uuid so every process agrees. */
export const evaluationOrder = (a: StoredRule, b: StoredRule): number =>
  a.priority - b.priority || a.created_at.getTime() - b.created_at.getTime() || (a.uuid < b.uuid ? -1 : 1)

const WHOLE_TEXT_ANCHOR = /\\A|\\z|\(\?[a-zA-Z]*-[a-zA-Z]*m/

export const compileRuleSet = (stored: ReadonlyArray<StoredRule>, version: string): CompiledRuleSet => {
  const ordered = stored.filter((rule) => rule.enabled).sort(evaluationOrder)
  const rules: Array<CompiledRule> = []
  const patterns: Array<string> = []
  const delimiterIntegrity: Array<DelimiterIntegrityRule> = []
  for (const rule of ordered) {
    if (rule.rule_type === "delimiter_integrity") {
      delimiterIntegrity.push({ uuid: rule.uuid, name: rule.name, action: rule.action })
      continue
    }
    if (rule.pattern === null) continue
    const test = compiled(rule.pattern, FLAGS)
    // Older data or a direct write: the spec says such a rule enforces nothing, silently.
    if (test instanceof Error) continue
    const all = compiled(rule.pattern, FLAGS + "g")
    const scan = compiled(rule.pattern, FLAGS + "gm")
    if (all instanceof Error || scan instanceof Error) continue
    rules.push({
      uuid: rule.uuid,
      name: rule.name,
      ruleType: rule.rule_type,
      action: rule.action,
      test,
      all,
      scan,
      alwaysTest: WHOLE_TEXT_ANCHOR.test(rule.pattern)
    })
    patterns.push(rule.pattern)
  }
  const setRules: Array<number> = []
  const sources: Array<string> = []
  rules.forEach((rule, index) => {
    if (rule.alwaysTest) return
    setRules.push(index)
    sources.push(patterns[index]!)
  })
  let set: RE2Set | undefined
  if (sources.length > 0) {
    try {
      set = new RE2.Set(sources, FLAGS + "m", { maxMem: SET_MAX_MEM })
    } catch {
      // Too large for one automaton: every rule is then tested on its own.
      set = undefined
    }
  }
  return { version, rules, set, setRules: set === undefined ? [] : setRules, delimiterIntegrity }
}
