// `npm run bench -- guardrails`: the guardrail engine on one core.
// - scan: 50 enabled patterns over an 8 MiB chat request (2,000 messages, tool calls and
//   tool results), none matching: the whole request path of `Guardrails.evaluate` on a
//   warm cache (walk the segments, one RE2.Set pass, per-rule checks only for candidates).
// - redact: the same body where 1 message in 50 carries a redacted value (spans + byte splice).
// - small: a 4 KiB chat request with 20 enabled rules, none matching (added time per request).
// Baselines, same run, same bytes: one `Buffer.indexOf` pass for an absent needle, and one
// RE2 `test` of a single pattern over the body. Writes bench/results/guardrails.json.
import { Duration, Effect } from "effect"
import { mkdirSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import RE2 from "re2"
import type { NewGuardrailRule } from "../schema/GuardrailRule.ts"
import { Invalidation } from "../src/db/Invalidation.ts"
import { makeGuardrails } from "../src/guardrails/Guardrails.ts"
import { memoryGuardrailStore } from "../src/guardrails/GuardrailStore.ts"

const RESULTS = fileURLToPath(new URL("./results/", import.meta.url))
const ORG = "0b6f8f4e-7d0c-4e59-9d55-1f2a3b4c5d6e"
const BODY_BYTES = 8 * 1024 * 1024
const TARGET_MB_PER_SECOND = 200
const RUNS = 25

/** Fifty patterns of the kinds organizations write: PII, credentials, keywords. */
const PATTERNS: ReadonlyArray<readonly [string, NewGuardrailRule["rule_type"], "block" | "redact" | "flag"]> = [
  ["\\b\\d{3}-\\d{2}-\\d{4}\\b", "pii_redact", "redact"],
  ["\\b(?:\\d[ -]?){13,16}\\b", "pii_redact", "redact"],
  ["[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}", "pii_redact", "redact"],
  ["\\bAKIA[0-9A-Z]{16}\\b", "blocked_pattern", "block"],
  ["\\bASIA[0-9A-Z]{16}\\b", "blocked_pattern", "block"],
  ["-----BEGIN (?:RSA |EC |OPENSSH )?PRIVATE KEY-----", "blocked_pattern", "block"],
  ["\\bghp_[A-Za-z0-9]{36}\\b", "blocked_pattern", "block"],
  ["\\bgithub_pat_[A-Za-z0-9_]{82}\\b", "blocked_pattern", "block"],
  ["\\bxox[baprs]-[A-Za-z0-9-]{10,48}\\b", "blocked_pattern", "block"],
  ["\\bsk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}\\b", "blocked_pattern", "block"],
  ["\\bsk-ant-[A-Za-z0-9_-]{90,}", "blocked_pattern", "block"],
  ["\\bAIza[0-9A-Za-z_-]{35}\\b", "blocked_pattern", "block"],
  ["\\beyJ[A-Za-z0-9_-]{10,}\\.eyJ[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_-]{10,}", "pii_redact", "redact"],
  ["(?i)\\bpassword\\s*[:=]\\s*\\S+", "pii_redact", "redact"],
  ["(?i)\\bapi[_-]?key\\s*[:=]\\s*\\S+", "pii_redact", "redact"],
  ["\\b[A-Z]{2}\\d{2}[A-Z0-9]{11,30}\\b", "pii_redact", "redact"],
  ["\\+?1?[ .-]?\\(?\\d{3}\\)?[ .-]\\d{3}[ .-]\\d{4}\\b", "pii_redact", "redact"],
  ["\\b(?:\\d{1,3}\\.){3}\\d{1,3}\\b", "blocked_pattern", "flag"],
  ["\\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\\b", "blocked_pattern", "flag"],
  ["(?i)ignore (?:all )?previous instructions", "blocked_pattern", "block"],
  ["(?i)disregard (?:the )?system prompt", "blocked_pattern", "block"],
  ["(?i)you are now (?:DAN|in developer mode)", "blocked_pattern", "block"],
  ["(?i)\\bjailbreak\\b", "blocked_pattern", "flag"],
  ["(?i)\\bproject (?:nightingale|bluebird|halcyon)\\b", "blocked_pattern", "block"],
  ["(?i)\\binternal use only\\b", "blocked_pattern", "flag"],
  ["(?i)\\bconfidential\\b", "blocked_pattern", "flag"],
  ["\\bxoxe\\.xox[bp]-\\d-[A-Za-z0-9]{160,}", "blocked_pattern", "block"],
  ["\\bnpm_[A-Za-z0-9]{36}\\b", "blocked_pattern", "block"],
  ["\\bglpat-[A-Za-z0-9_-]{20}\\b", "blocked_pattern", "block"],
  ["\\bSG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}\\b", "blocked_pattern", "block"],
  ["\\bsk_live_[0-9a-zA-Z]{24,}\\b", "blocked_pattern", "block"],
  ["\\brk_live_[0-9a-zA-Z]{24,}\\b", "blocked_pattern", "block"],
  ["\\bAC[a-f0-9]{32}\\b", "blocked_pattern", "flag"],
  ["(?i)\\bBearer\\s+[A-Za-z0-9._~+/-]{20,}=*", "pii_redact", "redact"],
  ["(?i)\\bBasic\\s+[A-Za-z0-9+/]{16,}={0,2}", "pii_redact", "redact"],
  ["\\b\\d{2}/\\d{2}/(?:19|20)\\d{2}\\b", "blocked_pattern", "flag"],
  ["(?i)\\bdate of birth\\b", "blocked_pattern", "flag"],
  ["(?i)\\bpassport (?:no|number)\\b", "blocked_pattern", "flag"],
  ["\\b[A-Z]{1,2}\\d[A-Z\\d]? ?\\d[A-Z]{2}\\b", "blocked_pattern", "flag"],
  ["(?i)\\bmedical record number\\b", "blocked_pattern", "flag"],
  ["\\bDE\\d{20}\\b", "pii_redact", "redact"],
  ["\\bFR\\d{12}[A-Z0-9]{11}\\d{2}\\b", "pii_redact", "redact"],
  ["(?i)\\bsecret[_-]?access[_-]?key\\b", "blocked_pattern", "block"],
  ["(?i)\\baws_session_token\\b", "blocked_pattern", "block"],
  ["(?i)\\bBEGIN PGP PRIVATE KEY BLOCK\\b", "blocked_pattern", "block"],
  ["\\bhooks\\.slack\\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+", "blocked_pattern", "block"],
  ["(?i)\\bdrop\\s+table\\b", "blocked_pattern", "flag"],
  ["(?i)<\\s*script\\b", "blocked_pattern", "flag"],
  ["(?i)\\brm\\s+-rf\\s+/", "blocked_pattern", "flag"],
  ["\\bVDB-CANARY-[0-9a-f]{16}\\b", "blocked_pattern", "block"]
]

/** Lowercase prose: no digits, capitals or punctuation the patterns look for. */
const WORDS = (
  "the quick brown fox jumps over lazy dog while vulnerability data flows through gateway " +
  "model answers question about release notes and build logs for service deployment today"
).split(" ")

const prose = (bytes: number, seed: number) => {
  let out = ""
  let i = seed
  while (out.length < bytes) {
    i = (i * 1103515245 + 12345) & 0x7fffffff
    out += WORDS[i % WORDS.length] + " "
  }
  return out
}

const chatBody = (targetBytes: number, messageBytes: number, withSecrets: boolean, systemBytes = 2000) => {
  const messages: Array<unknown> = [{ role: "system", content: prose(systemBytes, 1) }]
  let size = 0
  for (let i = 0; size < targetBytes - messageBytes; i++) {
    const text = prose(messageBytes, i + 7) + (withSecrets && i % 50 === 0 ? " ssn 123-45-6789 end" : "")
    if (i % 10 === 3) {
      messages.push({
        role: "assistant",
        content: null,
        tool_calls: [{
          id: `c${i}`,
          type: "function",
          function: { name: "lookup", arguments: JSON.stringify({ q: text.slice(0, 200) }) }
        }]
      })
      messages.push({ role: "tool", tool_call_id: `c${i}`, content: text })
    } else messages.push({ role: i % 2 === 0 ? "user" : "assistant", content: text })
    size += text.length + 40
  }
  return Buffer.from(JSON.stringify({ model: "gpt-4o", messages }))
}

const median = (values: Array<number>) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const time = (runs: number, f: () => unknown) => {
  for (let i = 0; i < 3; i++) f()
  const samples: Array<number> = []
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    f()
    samples.push(performance.now() - start)
  }
  return samples
}

const interleaved = (runs: number, fs: ReadonlyArray<() => unknown>) => {
  for (let i = 0; i < 3; i++) for (const f of fs) f()
  const samples = fs.map((): Array<number> => [])
  for (let i = 0; i < runs; i++) {
    fs.forEach((f, k) => {
      const start = performance.now()
      f()
      samples[k]!.push(performance.now() - start)
    })
  }
  return samples
}

const mbPerSecond = (bytes: number, ms: number) => Math.round((bytes / 1e6) / (ms / 1000))

const program = Effect.gen(function*() {
  const guardrails = yield* makeGuardrails({ store: memoryGuardrailStore(), ttl: Duration.hours(1), failOpen: false })
  for (const [index, [pattern, ruleType, action]] of PATTERNS.entries()) {
    yield* guardrails.create(ORG, { name: `rule-${index}`, rule_type: ruleType, action, pattern, priority: index })
  }
  const small = "1f0e0c2d-3b4a-4c5d-8e6f-7a8b9c0d1e2f"
  for (const [index, [pattern, ruleType, action]] of PATTERNS.slice(0, 20).entries()) {
    yield* guardrails.create(small, { name: `rule-${index}`, rule_type: ruleType, action, pattern, priority: index })
  }

  const clean = chatBody(BODY_BYTES, 4096, false)
  const dirty = chatBody(BODY_BYTES, 4096, true)
  const tiny = chatBody(3600, 600, false, 500)
  const cleanParsed = JSON.parse(clean.toString())
  const dirtyParsed = JSON.parse(dirty.toString())
  const tinyParsed = JSON.parse(tiny.toString())

  const evaluate = (org: string, body: Buffer, parsed: unknown) =>
    Effect.runSync(guardrails.evaluate(org, "chat", body, parsed))

  // Sanity: the scan matches nothing; the redaction case changes only its strings.
  const scanOutcome = evaluate(ORG, clean, cleanParsed)
  if (scanOutcome.decision !== "allow") throw new Error(`scan body matched: ${scanOutcome.rules.join(",")}`)
  const redactOutcome = evaluate(ORG, dirty, dirtyParsed)
  if (redactOutcome.decision !== "redact") throw new Error(`redaction body: ${redactOutcome.decision}`)
  if (evaluate(small, tiny, tinyParsed).decision !== "allow") throw new Error("small body matched")

  const single = new RE2(PATTERNS[0]![0], "u")
  // Interleaved, so the engine and its baselines see the same machine load.
  const [scan, redact, parse, indexOf, oneRe2] = interleaved(RUNS, [
    () => evaluate(ORG, clean, cleanParsed),
    () => evaluate(ORG, dirty, dirtyParsed),
    () => JSON.parse(clean.toString()),
    () => clean.indexOf("VDB-CANARY-ffffffffffffffff"),
    () => single.test(clean)
  ]).map(median) as [number, number, number, number, number]
  const smallSamples = time(2000, () => evaluate(small, tiny, tinyParsed))

  const scanMBs = mbPerSecond(clean.length, scan)
  const result = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? "unknown" },
    loadAverage: loadavg().map((n) => Math.round(n * 100) / 100),
    patterns: PATTERNS.length,
    bodyBytes: clean.length,
    segments: (cleanParsed.messages as Array<unknown>).length,
    scan: {
      ms: +scan.toFixed(2),
      mbPerSecond: scanMBs,
      target: TARGET_MB_PER_SECOND,
      met: scanMBs >= TARGET_MB_PER_SECOND
    },
    redact: {
      ms: +redact.toFixed(2),
      mbPerSecond: mbPerSecond(dirty.length, redact),
      redactions: redactOutcome.redactions
    },
    small: {
      bodyBytes: tiny.length,
      rules: 20,
      p50Ms: +median([...smallSamples]).toFixed(4),
      p99Ms: +smallSamples.sort((a, b) => a - b)[Math.floor(smallSamples.length * 0.99)]!.toFixed(4)
    },
    baseline: {
      jsonParse: { ms: +parse.toFixed(2), mbPerSecond: mbPerSecond(clean.length, parse) },
      bufferIndexOf: { ms: +indexOf.toFixed(2), mbPerSecond: mbPerSecond(clean.length, indexOf) },
      oneRe2Test: { ms: +oneRe2.toFixed(2), mbPerSecond: mbPerSecond(clean.length, oneRe2) }
    },
    ratioToBaseline: {
      scanVsIndexOf: +(indexOf / scan).toFixed(3),
      scanVsOneRe2Test: +(oneRe2 / scan).toFixed(3)
    }
  }
  mkdirSync(RESULTS, { recursive: true })
  writeFileSync(join(RESULTS, "guardrails.json"), `${JSON.stringify(result, null, 2)}\n`)
  console.log(JSON.stringify(result, null, 2))
})

await Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(Invalidation.layerMemory)))
