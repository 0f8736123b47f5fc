import RE2 from "re2"
import type { GuardrailAction, GuardrailRuleType } from "../../schema/GuardrailRule.ts"
import type { DelimiterIntegrityRule } from "./Guardrails.ts"

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

/** The RE2 compiler's message when `pattern` does not compile, else undefined. */
export const patternError = (pattern: string): string | undefined => {
  try {
    new RE2(pattern, FLAGS)
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
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
    let test: RE2
    let all: RE2
    let scan: RE2
    try {
      test = new RE2(rule.pattern, FLAGS)
      all = new RE2(rule.pattern, FLAGS + "g")
      scan = new RE2(rule.pattern, FLAGS + "gm")
    } catch {
      // Older data or a direct write: the spec says such a rule enforces nothing, silently.
      continue
    }
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
