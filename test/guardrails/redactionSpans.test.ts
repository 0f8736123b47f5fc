import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { Invalidation } from "../../src/db/Invalidation.ts"
import { makeGuardrails } from "../../src/guardrails/Guardrails.ts"
import { memoryGuardrailStore } from "../../src/guardrails/GuardrailStore.ts"

const org = "8b1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"

/** What reaches the provider for a chat message whose content literal is `literal`, with one ssn rule. */
const redacted = (literal: string) =>
  Effect.gen(function*() {
    const guardrails = yield* makeGuardrails({
      store: memoryGuardrailStore(),
      ttl: Duration.minutes(1),
      failOpen: false
    }).pipe(Effect.provide(Invalidation.layerMemory))
    yield* guardrails.create(org, { name: "ssn", rule_type: "pii_redact", pattern: "\\d{3}-\\d{2}-\\d{4}" })
    const bytes = Buffer.from(`{"model":"m","messages":[{"role":"user","content":${literal}}]}`)
    const outcome = yield* guardrails.evaluate(org, "chat", bytes, JSON.parse(bytes.toString()))
    const body = Buffer.from(outcome.body ?? bytes).toString()
    return body.slice(`{"model":"m","messages":[{"role":"user","content":`.length, -3)
  })

describe("where each redaction lands", () => {
  it.effect("a text holding the private-use characters the matches are marked with, `$` and lone surrogates", () =>
    Effect.gen(function*() {
      const raw = String.raw
      assert.strictEqual(
        yield* redacted(raw`"\ue000 123-45-6789\ue000$& \ud800 123-45-6789 \u00e9"`),
        raw`"\ue000 [REDACTED]\ue000$& \ud800 [REDACTED] \u00e9"`
      )
      // Every private-use character (and every one above them) is in the text: another one marks the matches.
      let all = ""
      for (let unit = 0xe000; unit < 0x10000; unit++) if (unit !== 0xfeff) all += String.fromCharCode(unit)
      const sent = `"${all} 123-45-6789 \\u0044123-45-6789 $"`
      assert.strictEqual(yield* redacted(sent), `"${all} [REDACTED] \\u0044[REDACTED] $"`)
    }))

  it.effect("20,000 matches in 540 KB of non-ASCII text take well under a second (a replacer function took 10 s)", () =>
    Effect.gen(function*() {
      const started = performance.now()
      const out = yield* redacted(`"${"123-45-6789 caf\\u00e9 text ".repeat(20000)}"`)
      assert.strictEqual(out, `"${"[REDACTED] caf\\u00e9 text ".repeat(20000)}"`)
      assert.isBelow(performance.now() - started, 3000)
    }))
})
