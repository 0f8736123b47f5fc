import type { GuardrailDecision } from "../../schema/GuardrailRule.ts"
import type { Violation } from "../../schema/PolicyRefusal.ts"
import type { CompiledRule, CompiledRuleSet } from "./CompiledRules.ts"
import { formatPath } from "./JsonPath.ts"
import { redact, REDACTED } from "./Redaction.ts"
import { composeChanges } from "./RedactionSpans.ts"
import type { TextChange } from "./TextChanges.ts"
import type { Segment } from "./TextSegments.ts"

export interface SegmentVerdict {
  readonly decision: GuardrailDecision
  readonly rules: ReadonlyArray<string>
  /** Redacting rules that matched (however many spans each replaced). */
  readonly redactions: number
  readonly blockedBy?: string | undefined
  readonly violations: ReadonlyArray<Violation>
  /** Segment index → redacted text, for segments a redaction changed (empty on a block). */
  readonly changed: ReadonlyMap<number, ChangedText>
}

/** A segment's text after the redactions, and exactly which characters of the original they replaced. */
export interface ChangedText {
  readonly text: string
  /** Sorted, disjoint, in UTF-16 units of the segment's original text (what the splice rewrites). */
  readonly changes: ReadonlyArray<TextChange>
}

const NOTHING_CHANGED: ReadonlyMap<number, ChangedText> = new Map()

export const allowSegments: SegmentVerdict = {
  decision: "allow",
  rules: [],
  redactions: 0,
  violations: [],
  changed: NOTHING_CHANGED
}

/**
 * Runs the compiled rules over the segments in priority order.
 *
 * All the text is written once into one UTF-8 buffer (segments joined by
 * newlines; RE2 reads bytes far faster than JavaScript strings). One pass of
 * the rule set's automaton over it finds which rules can match; each of those
 * then takes one pass of its own to find which segments hold a match, and
 * only those segments are checked (or redacted) on their own, so a match that
 * only exists across a join is dropped. A redaction rewrites the text later
 * rules see; a block stops.
 */
export const evaluateSegments = (
  ruleSet: CompiledRuleSet,
  segments: ReadonlyArray<Segment>,
  scratch: Scratch = makeScratch()
): SegmentVerdict => {
  const rules = ruleSet.rules
  if (rules.length === 0 || segments.length === 0) return allowSegments
  const joined = joinSegments(segments, scratch)
  const candidates = candidatesOf(ruleSet, joined.bytes)
  if (candidates.size === 0) return allowSegments

  const texts = segments.map((s) => s.text)
  const changed = new Map<number, ChangedText>()
  const matched: Array<string> = []
  const violations: Array<Violation> = []
  let redactions = 0
  let flagged = false

  // Rules that can match the text redactions wrote (recomputed after each redaction).
  let late: Set<number> | undefined
  for (let r = 0; r < rules.length; r++) {
    const rule = rules[r]!
    const candidate = candidates.has(r)
    if (!candidate) {
      // A rule the pass excluded can still match text an earlier redaction wrote.
      if (changed.size === 0) continue
      late ??= candidatesOf(ruleSet, Buffer.from([...changed.values()].map((c) => c.text).join("\n")))
      if (!late.has(r)) continue
    }
    const targets = targetsOf(rule, candidate, joined, changed)
    let first = -1
    if (rule.action === "redact") {
      // A property name cannot be rewritten in place: a redaction rule that matches one refuses the request.
      const key = targets.find((s) => segments[s]!.key === true && rule.test.test(texts[s]!.toWellFormed()))
      if (key !== undefined) {
        matched.push(rule.name)
        violations.push({
          ...violationOf(rule, segments[key]!),
          detail: `${rule.ruleType} rule matched in an object key at ${
            formatPath(segments[key]!.path) || "text"
          }, which cannot be redacted`
        })
        return {
          decision: "block",
          rules: matched,
          redactions: 0,
          blockedBy: rule.name,
          violations,
          changed: NOTHING_CHANGED
        }
      }
      for (const s of targets) {
        const [next, matches] = redact(rule, texts[s]!)
        if (matches.length === 0) continue
        texts[s] = next
        // Spans are recorded only here, for a segment a rule rewrote: a request no rule matches pays nothing.
        changed.set(s, {
          text: next,
          changes: composeChanges(changed.get(s)?.changes ?? [], matches, REDACTED.length, next)
        })
        late = undefined
        if (first === -1) first = s
      }
    } else {
      for (const s of targets) {
        if (rule.test.test(texts[s]!.toWellFormed())) {
          first = s
          break
        }
      }
    }
    if (first === -1) continue
    // Spec 2: X-Gateway-Firewall-Redactions is the number of redacting rules that matched, not of spans.
    if (rule.action === "redact") redactions++
    matched.push(rule.name)
    violations.push(violationOf(rule, segments[first]!))
    if (rule.action === "block") {
      return {
        decision: "block",
        rules: matched,
        redactions: 0,
        blockedBy: rule.name,
        violations,
        changed: NOTHING_CHANGED
      }
    }
    if (rule.action === "flag") flagged = true
  }
  if (matched.length === 0) return allowSegments
  return {
    decision: redactions > 0 ? "redact" : flagged ? "flag" : "allow",
    rules: matched,
    redactions,
    violations,
    changed
  }
}

/**
 * A reusable buffer for the joined text: a fresh multi-megabyte allocation per
 * request costs more in page faults than the encoding itself. Evaluation is
 * synchronous, so one engine's requests never use it at the same time.
 */
export interface Scratch {
  atLeast(size: number): Buffer
}

/** Keeps the largest buffer asked for, up to 32 MiB (an 8 MiB body needs at most 24). */
export const makeScratch = (): Scratch => {
  let held = Buffer.alloc(0)
  return {
    atLeast: (size) => {
      if (held.length >= size) return held
      const fresh = Buffer.allocUnsafe(size)
      if (size <= 32 * 1024 * 1024) held = fresh
      return fresh
    }
  }
}

interface JoinedText {
  readonly bytes: Buffer
  /** Byte offset where each segment starts. */
  readonly starts: Int32Array
}

/**
 * UTF-8 of every segment, newline-separated. Writing a lone surrogate gives
 * U+FFFD, so RE2 (which reads UTF-8) sees well-formed text.
 */
const joinSegments = (segments: ReadonlyArray<Segment>, scratch: Scratch): JoinedText => {
  let units = 0
  for (const segment of segments) units += segment.text.length + 1
  // At most 3 UTF-8 bytes per UTF-16 unit.
  const bytes = scratch.atLeast(units * 3)
  const starts = new Int32Array(segments.length)
  let at = 0
  for (let i = 0; i < segments.length; i++) {
    if (i > 0) bytes[at++] = 0x0a
    starts[i] = at
    at += bytes.write(segments[i]!.text, at)
  }
  return { bytes: bytes.subarray(0, at), starts }
}

const candidatesOf = (ruleSet: CompiledRuleSet, bytes: Buffer): Set<number> => {
  const { rules, set, setRules } = ruleSet
  if (set === undefined) return new Set(rules.keys())
  const candidates = new Set<number>()
  rules.forEach((rule, index) => {
    if (rule.alwaysTest) candidates.add(index)
  })
  for (const hit of set.match(bytes)) candidates.add(setRules[hit]!)
  return candidates
}

/** The segments to check one by one for a rule, in order. */
const targetsOf = (
  rule: CompiledRule,
  candidate: boolean,
  joined: JoinedText,
  changed: ReadonlyMap<number, unknown>
): ReadonlyArray<number> => {
  if (candidate && rule.alwaysTest) return Array.from(joined.starts.keys())
  const targets = new Set<number>(changed.keys())
  if (candidate) { for (const s of segmentsWithMatches(rule, joined)) targets.add(s) }
  return [...targets].sort((a, b) => a - b)
}

/**
 * One pass of the rule (multi-line, like the set) over the joined bytes. After
 * a match the search resumes at the next segment: a match that runs across a
 * join cannot hide one that lies wholly inside the next segment.
 */
const segmentsWithMatches = (rule: CompiledRule, joined: JoinedText): Array<number> => {
  const { bytes, starts } = joined
  const found: Array<number> = []
  const scan = rule.scan
  let from = 0
  for (;;) {
    // A subarray rather than `lastIndex`: RE2 with `u` walks the input up to `lastIndex` on every call.
    scan.lastIndex = 0
    const match = scan.exec(from === 0 ? bytes : bytes.subarray(from))
    if (match === null) break
    const segment = segmentAt(starts, from + match.index)
    found.push(segment)
    if (segment + 1 >= starts.length) break
    from = starts[segment + 1]!
  }
  return found
}

const segmentAt = (starts: Int32Array, offset: number): number => {
  let low = 0
  let high = starts.length - 1
  while (low < high) {
    const mid = (low + high + 1) >>> 1
    if (starts[mid]! <= offset) low = mid
    else high = mid - 1
  }
  return low
}

const violationOf = (rule: CompiledRule, segment: Segment): Violation => ({
  policy_uuid: rule.uuid,
  policy_name: rule.name,
  rule_type: rule.ruleType,
  action: rule.action,
  // The location only: the matched text never leaves the gateway.
  detail: `${rule.ruleType} rule matched in ${formatPath(segment.path) || "text"}`
})
