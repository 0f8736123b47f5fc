import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Surface } from "../../schema/GatewayRequest.ts"
import { Invalidation } from "../../src/db/Invalidation.ts"
import { MAX_DECODED_BYTES } from "../../src/guardrails/EncodedText.ts"
import { makeGuardrails } from "../../src/guardrails/Guardrails.ts"
import { memoryGuardrailStore } from "../../src/guardrails/GuardrailStore.ts"

/** Issue 32 §2 at the engine: text a provider decodes from a base64 or data: payload. */
const ORG = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
const KEY = "AKIAABCDEFGHIJKLMNOP"

const evaluate = (surface: Surface, doc: unknown, action: "block" | "redact" = "redact") =>
  Effect.gen(function*() {
    const guardrails = yield* makeGuardrails({
      store: memoryGuardrailStore(),
      ttl: Duration.minutes(1),
      failOpen: false
    }).pipe(Effect.provide(Invalidation.layerMemory))
    yield* guardrails.create(ORG, {
      name: "aws",
      rule_type: action === "redact" ? "pii_redact" : "blocked_pattern",
      pattern: "AKIA[0-9A-Z]{16}"
    })
    const body = Buffer.from(JSON.stringify(doc))
    const outcome = yield* guardrails.evaluate(ORG, surface, body, JSON.parse(body.toString()))
    return { outcome, sent: outcome.body === undefined ? undefined : Buffer.from(outcome.body).toString() }
  })

const chatFile = (file_data: string, filename = "n.txt") => ({
  model: "m",
  messages: [{ role: "user", content: [{ type: "file", file: { filename, file_data } }] }]
})

describe("textual payloads", () => {
  it.effect("a percent-encoded data: URL is decoded, and a redaction writes it back percent-encoded with its header as sent", () =>
    Effect.gen(function*() {
      const url = `data:text/plain;charset=UTF-8,${encodeURIComponent(`key ${KEY} & more`)}`
      const { outcome, sent } = yield* evaluate("chat", chatFile(url))
      assert.strictEqual(outcome.decision, "redact")
      const written: string = JSON.parse(sent!).messages[0].content[0].file.file_data
      assert.isTrue(written.startsWith("data:text/plain;charset=UTF-8,"))
      assert.strictEqual(decodeURIComponent(written.slice(written.indexOf(",") + 1)), "key [REDACTED] & more")
    }))

  it.effect("UTF-16LE text is read and written back in UTF-16LE; only the redacted string changes", () =>
    Effect.gen(function*() {
      const data = Buffer.from(`h\u00e9 ${KEY}`, "utf16le").toString("base64")
      const doc = {
        model: "m",
        max_tokens: 1,
        messages: [{
          role: "user",
          content: [
            { type: "document", source: { type: "base64", media_type: "text/plain; charset=utf-16le", data } },
            { type: "text", text: "read" }
          ]
        }]
      }
      const { sent } = yield* evaluate("messages", doc)
      const after = JSON.parse(sent!)
      assert.strictEqual(
        Buffer.from(after.messages[0].content[0].source.data, "base64").toString("utf16le"),
        "h\u00e9 [REDACTED]"
      )
      assert.deepStrictEqual({ ...after, messages: [] }, { ...doc, messages: [] })
    }))

  it.effect("a PDF, an image and audio are not decoded, whatever their bytes say", () =>
    Effect.gen(function*() {
      const b64 = Buffer.from(`text ${KEY}`).toString("base64")
      for (
        const [surface, doc] of [
          ["chat", chatFile(`data:application/pdf;base64,${b64}`, "a.pdf")],
          ["chat", chatFile(b64, "a.pdf")],
          ["messages", {
            model: "m",
            messages: [{
              role: "user",
              content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: b64 } }]
            }]
          }],
          ["responses", {
            model: "m",
            input: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: b64, format: "wav" } }] }]
          }]
        ] as const
      ) {
        const { outcome } = yield* evaluate(surface, doc, "block")
        assert.strictEqual(outcome.decision, "allow", JSON.stringify(doc).slice(0, 120))
      }
    }))

  it.effect(`over ${MAX_DECODED_BYTES / 1024 / 1024} MiB of textual payloads in one request is uninspectable`, () =>
    Effect.gen(function*() {
      const half = Buffer.from("x".repeat(MAX_DECODED_BYTES / 2)).toString("base64")
      const doc = {
        model: "m",
        messages: [{
          role: "user",
          content: [{ type: "file", file: { filename: "a.txt", file_data: half } }, {
            type: "file",
            file: { filename: "b.txt", file_data: half }
          }]
        }]
      }
      const { outcome } = yield* evaluate("chat", doc, "block")
      assert.strictEqual(outcome.uninspectable, true)
      assert.include(outcome.uninspectableDetail!, "MiB")
      const under = { ...doc, messages: [{ role: "user", content: [doc.messages[0]!.content[0]!] }] }
      assert.strictEqual((yield* evaluate("chat", under, "block")).outcome.decision, "allow")
    }))
})
