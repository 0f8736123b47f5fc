import { Effect } from "effect"
import type { Surface } from "../../schema/GatewayRequest.ts"
import {
  type GuardrailCheck,
  GuardrailError,
  GuardrailRuleInvalid,
  type GuardrailsUnavailable
} from "../../schema/GuardrailRule.ts"
import { type CompiledRuleSet, compileRuleSet } from "./CompiledRules.ts"
import { evaluateSegments, makeScratch, type Scratch } from "./Evaluation.ts"
import type { DelimiterIntegrityRule, GuardrailOutcome } from "./GuardrailOutcome.ts"
import type { JsonPath } from "./JsonPath.ts"
import { shapeOf, spliceStrings, type StringEdit } from "./JsonSplice.ts"
import { payloadChange } from "./RedactionSpans.ts"
import type { RuleCache } from "./RuleCache.ts"
import { readSegments } from "./TextSegments.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const noRules = compileRuleSet([], "none")
const allow: GuardrailOutcome = { decision: "allow", rules: [], redactions: 0, violations: [] }

/**
 * Nesting the guardrails read to. Real requests nest a few dozen levels (a tool's JSON schema the
 * most); a deeper one is refused rather than forwarded with text nobody read (`uninspectable`).
 */
export const MAX_INSPECTED_DEPTH = 128

const uninspectable: GuardrailOutcome = {
  decision: "block",
  rules: [],
  redactions: 0,
  violations: [],
  uninspectable: true
}
const failedOpen: GuardrailOutcome = { ...allow, failedOpen: true }

/**
 * The request-path half of the guardrails: fetch the organization's compiled
 * rules (cached per rule-set version), walk the surface's text segments, and
 * on a redaction rewrite only the changed JSON strings of the original bytes.
 */
export const makeGuardrailEngine = (options: { readonly cache: RuleCache; readonly failOpen: boolean }) => {
  const { cache } = options
  const scratch = makeScratch()

  // Organizations come authenticated on the request path; anything not shaped like one has no rules.
  const ruleSetOf = (orgUuid: string): Effect.Effect<CompiledRuleSet, GuardrailsUnavailable> =>
    UUID.test(orgUuid) ? cache.get(orgUuid.toLowerCase()) : Effect.succeed(noRules)

  // Runs once per inference: no span, and nothing is walked when the organization has no pattern rules.
  const evaluate = (
    orgUuid: string,
    surface: Surface,
    body: Uint8Array,
    parsed: unknown
  ): Effect.Effect<GuardrailOutcome, GuardrailsUnavailable> => {
    const run = Effect.map(ruleSetOf(orgUuid), (ruleSet) => outcomeOf(ruleSet, surface, body, parsed, scratch))
    return options.failOpen
      ? Effect.catchTag(
        run,
        "GuardrailsUnavailable",
        () =>
          Effect.as(
            Effect.logWarning("guardrails unavailable; passing the request (VDB_GATEWAY_FAIL_OPEN)"),
            failedOpen
          )
      )
      : run
  }

  const check = Effect.fn("Guardrails.check")(function*(orgUuid: string, text: string) {
    if (!UUID.test(orgUuid)) {
      return yield* new GuardrailError({ reason: new GuardrailRuleInvalid({ reason: "organization must be a UUID" }) })
    }
    const verdict = evaluateSegments(yield* ruleSetOf(orgUuid), [{ path: [], text }], scratch)
    const result: GuardrailCheck = {
      decision: verdict.decision,
      rules: verdict.rules,
      redactions: verdict.redactions,
      ...(verdict.blockedBy !== undefined ? { blocked_by: verdict.blockedBy } : {})
    }
    return result
  })

  const delimiterIntegrity = (
    orgUuid: string
  ): Effect.Effect<ReadonlyArray<DelimiterIntegrityRule>, GuardrailsUnavailable> => {
    const rules = Effect.map(ruleSetOf(orgUuid), (set) => set.delimiterIntegrity)
    // A delimiter_integrity rule is a guardrail rule: fail-open lets it pass like the others.
    return options.failOpen ? Effect.catchTag(rules, "GuardrailsUnavailable", () => Effect.succeed([])) : rules
  }

  return { evaluate, check, delimiterIntegrity }
}

const outcomeOf = (
  ruleSet: CompiledRuleSet,
  surface: Surface,
  body: Uint8Array,
  parsed: unknown,
  scratch: Scratch
): GuardrailOutcome => {
  if (ruleSet.rules.length === 0) return allow
  const shape = shapeOf(body, MAX_INSPECTED_DEPTH)
  if (shape.tooDeep) return uninspectable
  // A key named twice: the segments are what `JSON.parse` kept (the last). What goes upstream is then
  // that reading, re-serialised, never the client's bytes, which a provider might read the other way.
  const asRead = shape.duplicateKeys
  const read = readSegments(surface, parsed)
  if (read.undecodable !== undefined) {
    return { ...uninspectable, uninspectableDetail: `the request carries ${read.undecodable}` }
  }
  const segments = read.segments
  const verdict = evaluateSegments(ruleSet, segments, scratch)
  if (verdict.rules.length === 0) return asRead ? { ...allow, body: reserialised(parsed, []) } : allow
  const outcome: GuardrailOutcome = {
    decision: verdict.decision,
    rules: verdict.rules,
    redactions: verdict.redactions,
    blockedBy: verdict.blockedBy,
    violations: verdict.violations
  }
  if (verdict.changed.size === 0) return asRead ? { ...outcome, body: reserialised(parsed, []) } : outcome
  const edits: Array<StringEdit> = []
  for (const [index, { changes, text }] of verdict.changed) {
    const segment = segments[index]!
    // The exact spans the rules replaced: the splice rewrites those and keeps every other byte as sent.
    if (segment.encode === undefined) {
      edits.push({ path: segment.path, text, changes })
      continue
    }
    // Decoded text (a base64 or data: document) goes back in its encoding: the payload is written anew.
    const raw = segment.encode(text)
    if (raw === undefined) {
      return {
        ...uninspectable,
        uninspectableDetail: "a redaction in a textual payload that cannot be written back in its character set"
      }
    }
    const sent = valueAt(parsed, segment.path)
    edits.push({
      path: segment.path,
      text: raw,
      changes: typeof sent === "string" ? payloadChange(sent, raw) : undefined
    })
  }
  return { ...outcome, body: (asRead ? undefined : spliceStrings(body, edits)) ?? reserialised(parsed, edits) }
}

/**
 * When the bytes could not be scanned the way `JSON.parse` read them (which
 * the scanner is built never to hit), or name a key twice: the whole document
 * is written anew rather than forwarding text a rule said to redact, or text
 * no rule read.
 */
const reserialised = (parsed: unknown, edits: ReadonlyArray<StringEdit>) => {
  if (edits.length === 0) return Buffer.from(JSON.stringify(parsed))
  const copy = structuredClone(parsed)
  for (const edit of edits) setAt(copy, edit.path, edit.text)
  return Buffer.from(JSON.stringify(copy))
}

const valueAt = (root: unknown, path: JsonPath): unknown => {
  let node = root
  for (const step of path) node = (node as Record<string | number, unknown> | null | undefined)?.[step]
  return node
}

const setAt = (root: unknown, path: JsonPath, value: string) => {
  let node = root as Record<string | number, unknown>
  for (let i = 0; i < path.length - 1; i++) node = node[path[i]!] as Record<string | number, unknown>
  node[path[path.length - 1]!] = value
}
