import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect } from "effect"
import { randomUUID } from "node:crypto"
import type { Surface } from "../../schema/GatewayRequest.ts"
import type { NewGuardrailRule } from "../../schema/GuardrailRule.ts"
import { Invalidation } from "../../src/db/Invalidation.ts"
import { failOpenConfig, type Guardrails, makeGuardrails } from "../../src/guardrails/Guardrails.ts"
import { type GuardrailStore, memoryGuardrailStore } from "../../src/guardrails/GuardrailStore.ts"

const ORG = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"

const withRules = (rules: ReadonlyArray<NewGuardrailRule>, options: { failOpen?: boolean } = {}) =>
  Effect.gen(function*() {
    const store = memoryGuardrailStore()
    const guardrails = yield* makeGuardrails({ store, ttl: Duration.minutes(1), failOpen: options.failOpen ?? false })
      .pipe(Effect.provide(Invalidation.layerMemory))
    for (const rule of rules) yield* guardrails.create(ORG, rule)
    return { guardrails, store }
  })

const run = (guardrails: Guardrails["Service"], surface: Surface, doc: unknown) => {
  const body = Buffer.from(JSON.stringify(doc, null, 1))
  return Effect.map(guardrails.evaluate(ORG, surface, body, JSON.parse(body.toString())), (outcome) => ({
    outcome,
    body,
    after: outcome.body === undefined ? undefined : JSON.parse(Buffer.from(outcome.body).toString())
  }))
}

const SSN = { name: "ssn", rule_type: "pii_redact", pattern: "\\d{3}-\\d{2}-\\d{4}" } as const

describe("guardrail evaluation", () => {
  it.effect("runs rules in priority order and a block stops evaluation", () =>
    Effect.gen(function*() {
      const { guardrails } = yield* withRules([
        { name: "late-flag", rule_type: "blocked_pattern", action: "flag", pattern: "launch", priority: 30 },
        { name: "block-codes", rule_type: "blocked_pattern", pattern: "launch codes", priority: 20 },
        { name: "early-flag", rule_type: "blocked_pattern", action: "flag", pattern: "codes", priority: 10 }
      ])
      const { outcome } = yield* run(guardrails, "chat", {
        model: "m",
        messages: [{ role: "user", content: "the launch codes are 1234" }]
      })
      assert.strictEqual(outcome.decision, "block")
      assert.strictEqual(outcome.blockedBy, "block-codes")
      // `late-flag` would match too, but the block stopped evaluation before it ran.
      assert.deepStrictEqual(outcome.rules, ["early-flag", "block-codes"])
      assert.isUndefined(outcome.body)
      assert.deepStrictEqual(outcome.violations.map((v) => [v.policy_name, v.rule_type, v.action]), [
        ["early-flag", "blocked_pattern", "flag"],
        ["block-codes", "blocked_pattern", "block"]
      ])
      for (const v of outcome.violations) {
        assert.notInclude(v.detail, "launch")
        assert.strictEqual(v.detail, "blocked_pattern rule matched in messages[0].content")
      }
    }))

  it.effect("a flag records the match and changes nothing", () =>
    Effect.gen(function*() {
      const { guardrails } = yield* withRules([
        { name: "mentions-acme", rule_type: "blocked_pattern", action: "flag", pattern: "(?i)acme" }
      ])
      const { outcome } = yield* run(guardrails, "messages", {
        model: "m",
        system: [{ type: "text", text: "You work for ACME." }],
        messages: [{ role: "user", content: "hi" }]
      })
      assert.strictEqual(outcome.decision, "flag")
      assert.deepStrictEqual(outcome.rules, ["mentions-acme"])
      assert.strictEqual(outcome.redactions, 0)
      assert.isUndefined(outcome.body)
    }))

  it.effect("no match and no rules forward the original bytes", () =>
    Effect.gen(function*() {
      const none = yield* withRules([])
      const empty = yield* run(none.guardrails, "chat", { model: "m", messages: [{ role: "user", content: "x" }] })
      assert.strictEqual(empty.outcome.decision, "allow")
      assert.isUndefined(empty.outcome.body)
      const some = yield* withRules([SSN])
      const clean = yield* run(some.guardrails, "chat", { model: "m", messages: [{ role: "user", content: "x" }] })
      assert.deepStrictEqual([clean.outcome.decision, clean.outcome.rules.length], ["allow", 0])
      assert.isUndefined(clean.outcome.body)
    }))

  describe("redacts tool results on later turns and leaves tool-call arguments untouched", () => {
    const secret = "123-45-6789"

    it.effect("chat", () =>
      Effect.gen(function*() {
        const { guardrails } = yield* withRules([SSN])
        const args = JSON.stringify({ ssn: secret })
        const { after, outcome } = yield* run(guardrails, "chat", {
          model: "m",
          messages: [
            { role: "system", content: "be brief" },
            { role: "user", content: [{ type: "text", text: `mine is ${secret}` }] },
            {
              role: "assistant",
              content: null,
              tool_calls: [{ id: "c1", type: "function", function: { name: "lookup", arguments: args } }]
            },
            { role: "tool", tool_call_id: "c1", content: `record ${secret} found; also ${secret}` }
          ]
        })
        assert.strictEqual(outcome.decision, "redact")
        // One rule, however many spans it replaced (spec 2: the count of redacting rules that matched).
        assert.strictEqual(outcome.redactions, 1)
        assert.strictEqual(after.messages[1].content[0].text, "mine is [REDACTED]")
        assert.strictEqual(after.messages[3].content, "record [REDACTED] found; also [REDACTED]")
        assert.strictEqual(after.messages[2].tool_calls[0].function.arguments, args)
      }))

    it.effect("responses", () =>
      Effect.gen(function*() {
        const { guardrails } = yield* withRules([SSN])
        const args = JSON.stringify({ ssn: secret })
        const { after, outcome } = yield* run(guardrails, "responses", {
          model: "m",
          instructions: `never say ${secret}`,
          input: [
            { role: "user", content: [{ type: "input_text", text: "look it up" }] },
            { type: "function_call", call_id: "c1", name: "lookup", arguments: args },
            { type: "function_call_output", call_id: "c1", output: `found ${secret}` }
          ]
        })
        // One rule, however many spans it replaced (spec 2: the count of redacting rules that matched).
        assert.strictEqual(outcome.redactions, 1)
        assert.strictEqual(after.instructions, "never say [REDACTED]")
        assert.strictEqual(after.input[2].output, "found [REDACTED]")
        assert.strictEqual(after.input[1].arguments, args)
      }))

    it.effect("messages", () =>
      Effect.gen(function*() {
        const { guardrails } = yield* withRules([SSN])
        const { after, outcome } = yield* run(guardrails, "messages", {
          model: "m",
          system: `reference ${secret}`,
          messages: [
            { role: "user", content: "look it up" },
            { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "lookup", input: { ssn: secret } }] },
            {
              role: "user",
              content: [
                { type: "tool_result", tool_use_id: "t1", content: [{ type: "text", text: `found ${secret}` }] },
                { type: "tool_result", tool_use_id: "t2", content: `and ${secret}` }
              ]
            }
          ]
        })
        // One rule, however many spans it replaced (spec 2: the count of redacting rules that matched).
        assert.strictEqual(outcome.redactions, 1)
        assert.strictEqual(after.system, "reference [REDACTED]")
        assert.strictEqual(after.messages[2].content[0].content[0].text, "found [REDACTED]")
        assert.strictEqual(after.messages[2].content[1].content, "and [REDACTED]")
        assert.deepStrictEqual(after.messages[1].content[0].input, { ssn: secret })
      }))

    it.effect("kiro", () =>
      Effect.gen(function*() {
        const { guardrails } = yield* withRules([SSN])
        const { after, outcome } = yield* run(guardrails, "kiro", {
          model: "m",
          conversationState: {
            history: [
              { userInputMessage: { content: `mine is ${secret}` } },
              {
                assistantResponseMessage: {
                  content: "checking",
                  toolUses: [{ toolUseId: "t1", name: "lookup", input: { ssn: secret } }]
                }
              }
            ],
            currentMessage: {
              userInputMessage: {
                content: "result attached",
                userInputMessageContext: { toolResults: [{ toolUseId: "t1", content: [{ text: `found ${secret}` }] }] }
              }
            }
          }
        })
        // One rule, however many spans it replaced (spec 2: the count of redacting rules that matched).
        assert.strictEqual(outcome.redactions, 1)
        const state = after.conversationState
        assert.strictEqual(state.history[0].userInputMessage.content, "mine is [REDACTED]")
        assert.strictEqual(
          state.currentMessage.userInputMessage.userInputMessageContext.toolResults[0].content[0].text,
          "found [REDACTED]"
        )
        assert.deepStrictEqual(state.history[1].assistantResponseMessage.toolUses[0].input, { ssn: secret })
      }))
  })

  it.effect("a later rule sees earlier redactions; redaction then flag is a redact outcome", () =>
    Effect.gen(function*() {
      const { guardrails } = yield* withRules([
        { ...SSN, priority: 1 },
        { name: "saw-redaction", rule_type: "blocked_pattern", action: "flag", pattern: "\\[REDACTED\\]", priority: 2 }
      ])
      const { outcome } = yield* run(guardrails, "chat", {
        model: "m",
        messages: [{ role: "user", content: "123-45-6789" }]
      })
      assert.strictEqual(outcome.decision, "redact")
      assert.deepStrictEqual(outcome.rules, ["ssn", "saw-redaction"])
    }))

  it.effect("redactions counts the redacting rules that matched: two rules over five spans are 2", () =>
    Effect.gen(function*() {
      const { guardrails } = yield* withRules([
        { ...SSN, priority: 1 },
        { name: "emails", rule_type: "pii_redact", action: "redact", pattern: "[a-z]+@example\\.com", priority: 2 },
        { name: "unused", rule_type: "pii_redact", action: "redact", pattern: "never-here", priority: 3 }
      ])
      const { after, outcome } = yield* run(guardrails, "chat", {
        model: "m",
        messages: [{ role: "user", content: "123-45-6789 a@example.com 987-65-4321 b@example.com 555-12-3456" }]
      })
      assert.deepStrictEqual([outcome.decision, outcome.rules, outcome.redactions], ["redact", ["ssn", "emails"], 2])
      assert.strictEqual(after.messages[0].content, "[REDACTED] [REDACTED] [REDACTED] [REDACTED] [REDACTED]")
    }))

  it.effect("segments are matched on their own: anchors see each segment's edges", () =>
    Effect.gen(function*() {
      const { guardrails } = yield* withRules([
        { name: "starts", rule_type: "blocked_pattern", action: "flag", pattern: "^second", priority: 1 },
        { name: "whole", rule_type: "blocked_pattern", action: "flag", pattern: "\\Asecond\\z", priority: 2 },
        { name: "across", rule_type: "blocked_pattern", action: "flag", pattern: "first\\ssecond", priority: 3 }
      ])
      const { outcome } = yield* run(guardrails, "chat", {
        model: "m",
        messages: [{ role: "user", content: "first" }, { role: "user", content: "second" }]
      })
      assert.deepStrictEqual(outcome.rules, ["starts", "whole"])
    }))

  it.effect("a lone surrogate (a legal JSON escape) neither hides a match nor is lost by a redaction", () =>
    Effect.gen(function*() {
      const { guardrails } = yield* withRules([
        { name: "codes", rule_type: "blocked_pattern", action: "flag", pattern: "codes", priority: 1 },
        { ...SSN, priority: 2 }
      ])
      const body = Buffer.from(
        `{"model":"m","messages":[{"role":"user","content":"\\ud800codes \\udc00 123-45-6789 \u00e9"}]}`
      )
      const outcome = yield* guardrails.evaluate(ORG, "chat", body, JSON.parse(body.toString()))
      assert.deepStrictEqual([outcome.decision, outcome.rules, outcome.redactions], ["redact", ["codes", "ssn"], 1])
      assert.strictEqual(
        JSON.parse(Buffer.from(outcome.body!).toString()).messages[0].content,
        "\ud800codes \udc00 [REDACTED] \u00e9"
      )
    }))

  it.effect("a change made through one process's service reaches another's cache through the invalidation bus", () =>
    Effect.gen(function*() {
      const store = memoryGuardrailStore()
      // Two processes sharing one database: the TTL alone would keep B on the old rules for an hour.
      const a = yield* makeGuardrails({ store, ttl: Duration.hours(1), failOpen: false })
      const b = yield* makeGuardrails({ store, ttl: Duration.hours(1), failOpen: false })
      const doc = { model: "m", messages: [{ role: "user", content: "codes" }] }
      assert.strictEqual((yield* run(b, "chat", doc)).outcome.decision, "allow")
      const rule = yield* a.create(ORG, { name: "codes", rule_type: "blocked_pattern", pattern: "codes" })
      assert.strictEqual((yield* run(b, "chat", doc)).outcome.decision, "block")
      yield* a.setEnabled(ORG, rule.uuid, false)
      assert.strictEqual((yield* run(b, "chat", doc)).outcome.decision, "allow")
    }).pipe(Effect.provide(Invalidation.layerMemory)))

  describe("tool definitions the model is shown, and text in shapes the walker does not know, are inspected too", () => {
    const KEY = "AKIAABCDEFGHIJKLMNOP"
    const AWS = { name: "aws-keys", rule_type: "blocked_pattern", pattern: "AKIA[0-9A-Z]{16}" } as const
    const blockedAt = (surface: Surface, doc: unknown, where: string) =>
      Effect.gen(function*() {
        const { guardrails } = yield* withRules([AWS])
        const { outcome } = yield* run(guardrails, surface, doc)
        assert.strictEqual(outcome.decision, "block", where)
        assert.strictEqual(outcome.violations[0]!.detail, `blocked_pattern rule matched in ${where}`)
      })
    const user = [{ role: "user", content: "hi" }]
    const fn = {
      name: "f",
      description: `uses ${KEY}`,
      parameters: { type: "object", properties: { a: { type: "string", description: KEY } } }
    }

    it.effect("chat: tool descriptions and schemas, a participant's name, a string messages, an object content, a bare string part", () =>
      Effect.gen(function*() {
        yield* blockedAt(
          "chat",
          { model: "m", messages: user, tools: [{ type: "function", function: fn }] },
          "tools[0].function.description"
        )
        yield* blockedAt("chat", {
          model: "m",
          messages: user,
          tools: [{ type: "function", function: { ...fn, description: "d" } }]
        }, "tools[0].function.parameters.properties.*.description")
        yield* blockedAt(
          "chat",
          { model: "m", messages: [{ role: "user", name: KEY, content: "hi" }] },
          "messages[0].name"
        )
        yield* blockedAt("chat", { model: "m", messages: KEY }, "messages")
        yield* blockedAt(
          "chat",
          { model: "m", messages: [{ role: "user", content: { text: KEY } }] },
          "messages[0].content.text"
        )
        yield* blockedAt(
          "chat",
          { model: "m", messages: [{ role: "user", content: ["hi", KEY] }] },
          "messages[0].content[1]"
        )
        yield* blockedAt("chat", { model: "m", messages: [KEY] }, "messages[0]")
      }))

    it.effect("responses, messages and kiro: tool definitions and unknown shapes", () =>
      Effect.gen(function*() {
        yield* blockedAt(
          "responses",
          { model: "m", input: "hi", tools: [{ type: "function", ...fn }] },
          "tools[0].description"
        )
        yield* blockedAt("responses", { model: "m", input: { text: KEY } }, "input.text")
        yield* blockedAt("messages", {
          model: "m",
          messages: user,
          tools: [{ name: "f", description: KEY, input_schema: { type: "object" } }]
        }, "tools[0].description")
        yield* blockedAt(
          "messages",
          { model: "m", messages: [{ role: "user", content: { text: KEY } }] },
          "messages[0].content.text"
        )
        yield* blockedAt("messages", { model: "m", system: { text: KEY }, messages: user }, "system.text")
        yield* blockedAt(
          "kiro",
          {
            conversationState: {
              currentMessage: {
                userInputMessage: {
                  content: "hi",
                  userInputMessageContext: {
                    tools: [{ toolSpecification: { name: "f", description: KEY, inputSchema: { json: {} } } }]
                  }
                }
              }
            }
          },
          "conversationState.currentMessage.userInputMessage.userInputMessageContext.tools[0].toolSpecification.description"
        )
      }))

    it.effect("every field the model reads is inspected, wherever the providers put it (each of these reached the model)", () =>
      Effect.gen(function*() {
        const doc = (text: string) => ({
          type: "document",
          source: { type: "text", media_type: "text/plain", data: text }
        })
        const cases: ReadonlyArray<readonly [Surface, Record<string, unknown>, string]> = [
          ["messages", {
            model: "m",
            messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: [doc(KEY)] }] }]
          }, "messages[0].content[0].content[0].source.data"],
          ["messages", {
            model: "m",
            messages: [{
              role: "user",
              content: [{ type: "mcp_tool_result", tool_use_id: "m1", content: [{ type: "text", text: KEY }] }]
            }]
          }, "messages[0].content[0].content[0].text"],
          ["messages", {
            model: "m",
            messages: [{
              role: "assistant",
              content: [{
                type: "web_fetch_tool_result",
                tool_use_id: "s1",
                content: { type: "web_fetch_result", url: "u", content: doc(KEY) }
              }]
            }]
          }, "messages[0].content[0].content.content.source.data"],
          ["messages", {
            model: "m",
            messages: [{
              role: "user",
              content: [{ type: "search_result", source: "s", title: "t", content: [{ type: "text", text: KEY }] }]
            }]
          }, "messages[0].content[0].content[0].text"],
          ["messages", {
            model: "m",
            messages: [{
              role: "user",
              content: [{ type: "document", source: { type: "content", content: [{ type: "text", text: KEY }] } }]
            }]
          }, "messages[0].content[0].source.content[0].text"],
          ["messages", {
            model: "m",
            messages: [{ role: "assistant", content: [{ type: "thinking", thinking: KEY, signature: "sig" }] }]
          }, "messages[0].content[0].thinking"],
          ["messages", {
            model: "m",
            messages: [{
              role: "assistant",
              content: [{ type: "text", text: "x", citations: [{ type: "char_location", cited_text: KEY }] }]
            }]
          }, "messages[0].content[0].citations[0].cited_text"],
          [
            "responses",
            { model: "m", input: [{ type: "local_shell_call_output", call_id: "c", output: KEY }] },
            "input[0].output"
          ],
          [
            "responses",
            { model: "m", input: "hi", prompt: { id: "pmpt_1", variables: { x: KEY } } },
            "prompt.variables.*"
          ],
          ["responses", {
            model: "m",
            input: "hi",
            text: { format: { type: "json_schema", name: "x", description: KEY, schema: {} } }
          }, "text.format.description"],
          ["responses", {
            model: "m",
            input: [{ type: "reasoning", id: "r", summary: [{ type: "summary_text", text: KEY }] }]
          }, "input[0].summary[0].text"],
          [
            "chat",
            { model: "m", messages: user, functions: [{ name: "f", description: KEY, parameters: {} }] },
            "functions[0].description"
          ],
          ["chat", { model: "m", messages: user, prediction: { type: "content", content: KEY } }, "prediction.content"],
          [
            "chat",
            { model: "m", messages: [{ role: "assistant", content: [{ type: "refusal", refusal: KEY }] }] },
            "messages[0].content[0].refusal"
          ],
          ["chat", {
            model: "m",
            messages: user,
            response_format: { type: "json_schema", json_schema: { name: "x", description: KEY, schema: {} } }
          }, "response_format.json_schema.description"],
          // A property name in a tool schema is text the model reads; the location never repeats it.
          ["chat", {
            model: "m",
            messages: user,
            tools: [{
              type: "function",
              function: { name: "f", parameters: { type: "object", properties: { [KEY]: { type: "string" } } } }
            }]
          }, "tools[0].function.parameters.properties.*"]
        ]
        for (const [surface, body, where] of cases) yield* blockedAt(surface, body, where)
      }))

    it.effect("what the model generated or cannot read is left alone at its documented place: tool-call arguments, media, opaque reasoning", () =>
      Effect.gen(function*() {
        const { guardrails } = yield* withRules([AWS, SSN])
        const image = { type: "image", source: { type: "base64", media_type: "image/png", data: `${KEY}123-45-6789` } }
        const cases: ReadonlyArray<readonly [Surface, Record<string, unknown>]> = [
          ["messages", {
            model: "m",
            messages: [{
              role: "assistant",
              content: [{ type: "tool_use", id: "t", name: "f", input: { k: KEY } }, {
                type: "redacted_thinking",
                data: KEY
              }, { type: "thinking", thinking: "hm", signature: KEY }]
            }, { role: "user", content: [image, { type: "tool_result", tool_use_id: "t", content: "ok" }] }]
          }],
          ["chat", {
            model: "m",
            messages: [{
              role: "assistant",
              content: null,
              tool_calls: [{
                id: "c",
                type: "function",
                function: { name: "f", arguments: JSON.stringify({ k: KEY }) }
              }]
            }, {
              role: "user",
              content: [{ type: "image_url", image_url: { url: `data:image/png;base64,${KEY}` } }, {
                type: "input_audio",
                input_audio: { data: KEY, format: "wav" }
              }]
            }]
          }],
          ["responses", {
            model: "m",
            input: [
              { type: "function_call", call_id: "c", name: "f", arguments: KEY },
              { type: "custom_tool_call", call_id: "c", name: "f", input: KEY },
              { type: "local_shell_call", call_id: "l", action: { command: [KEY] } },
              { type: "reasoning", id: "r", summary: [], encrypted_content: KEY }
            ]
          }],
          ["kiro", {
            conversationState: {
              currentMessage: {
                userInputMessage: { content: "hi", images: [{ format: "png", source: { bytes: KEY } }] }
              },
              history: [{
                assistantResponseMessage: {
                  content: "ok",
                  toolUses: [{ toolUseId: "t", name: "f", input: { k: KEY } }]
                }
              }]
            }
          }]
        ]
        for (const [surface, body] of cases) {
          const { outcome } = yield* run(guardrails, surface, body)
          assert.deepStrictEqual([outcome.decision, outcome.rules], ["allow", []], surface)
        }
      }))

    it.effect("the model name, metadata, end-user fields and identifiers reach the provider: they are inspected (issue 32)", () =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [Surface, Record<string, unknown>, string]> = [
          ["messages", { model: KEY, messages: user }, "model"],
          ["messages", { model: "m", metadata: { user_id: KEY }, messages: user }, "metadata.*"],
          ["messages", {
            model: "m",
            messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: KEY, content: "ok" }] }]
          }, "messages[0].content[0].tool_use_id"],
          ["chat", { model: "m", user: KEY, messages: user }, "user"],
          [
            "chat",
            { model: "m", messages: [{ role: "tool", tool_call_id: KEY, content: "ok" }] },
            "messages[0].tool_call_id"
          ],
          [
            "responses",
            { model: "m", input: [{ type: "function_call_output", call_id: KEY, output: "ok" }] },
            "input[0].call_id"
          ],
          [
            "kiro",
            { conversationState: { currentMessage: { userInputMessage: { content: "hi", modelId: KEY } } } },
            "conversationState.currentMessage.userInputMessage.modelId"
          ]
        ]
        for (const [surface, body, where] of cases) yield* blockedAt(surface, body, where)
      }))

    it.effect("a redaction rule that matches a property name refuses the request: a key cannot be rewritten, and the detail does not repeat it", () =>
      Effect.gen(function*() {
        const { guardrails } = yield* withRules([SSN])
        const { outcome } = yield* run(guardrails, "chat", {
          model: "m",
          messages: user,
          tools: [{
            type: "function",
            function: {
              name: "f",
              parameters: { type: "object", properties: { "ssn 123-45-6789": { type: "string" } } }
            }
          }]
        })
        assert.deepStrictEqual([outcome.decision, outcome.blockedBy], ["block", "ssn"])
        assert.strictEqual(
          outcome.violations[0]!.detail,
          "pii_redact rule matched in an object key at tools[0].function.parameters.properties.*, which cannot be redacted"
        )
      }))

    it.effect("a redaction in a tool description rewrites that string alone; tool-call arguments stay untouched", () =>
      Effect.gen(function*() {
        const { guardrails } = yield* withRules([SSN])
        const args = JSON.stringify({ ssn: "123-45-6789" })
        const { after, outcome } = yield* run(guardrails, "chat", {
          model: "m",
          tools: [{
            type: "function",
            function: { name: "lookup", description: "finds 123-45-6789", parameters: { type: "object" } }
          }],
          messages: [{
            role: "assistant",
            content: null,
            tool_calls: [{ id: "c1", type: "function", function: { name: "lookup", arguments: args } }]
          }]
        })
        assert.strictEqual(outcome.redactions, 1)
        assert.strictEqual(after.tools[0].function.description, "finds [REDACTED]")
        assert.deepStrictEqual(after.tools[0].function.parameters, { type: "object" })
        assert.strictEqual(after.messages[0].tool_calls[0].function.arguments, args)
      }))
  })

  describe("a body whose reading could differ upstream, or that nests deeper than the rules read", () => {
    const KEY = "AKIAABCDEFGHIJKLMNOP"
    const AWS = { name: "aws-keys", rule_type: "blocked_pattern", pattern: "AKIA[0-9A-Z]{16}" } as const
    const evaluateText = (guardrails: Guardrails["Service"], surface: Surface, text: string) =>
      guardrails.evaluate(ORG, surface, Buffer.from(text), JSON.parse(text))

    it.effect("a key named twice: the last is inspected, and what goes upstream is that reading, re-serialised", () =>
      Effect.gen(function*() {
        const { guardrails } = yield* withRules([AWS])
        // The first "content" holds the key; JSON.parse (and the rules) see the second.
        const text = `{"model":"m","messages":[{"role":"user","content":"${KEY}","content":"hi"}]}`
        const outcome = yield* evaluateText(guardrails, "chat", text)
        assert.strictEqual(outcome.decision, "allow")
        assert.strictEqual(
          Buffer.from(outcome.body!).toString(),
          `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
        )
        // Keys spelled with escapes are the same key.
        const escaped = yield* evaluateText(
          guardrails,
          "chat",
          `{"model":"m","messages":[{"role":"user","\u0063ontent":"${KEY}","content":"hi"}]}`
        )
        assert.notInclude(Buffer.from(escaped.body!).toString(), KEY)
        // Without a key named twice, the client's bytes go as they are.
        const plain = yield* evaluateText(
          guardrails,
          "chat",
          `{"model":"m", "messages":[{"role":"user","content":"hi"}]}`
        )
        assert.isUndefined(plain.body)
        // The same key in two different objects is not a duplicate.
        const two = yield* evaluateText(
          guardrails,
          "chat",
          `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`
        )
        assert.isUndefined(two.body)
      }))

    it.effect("nesting deeper than 128 levels is refused as uninspectable, at any depth JSON.parse takes", () =>
      Effect.gen(function*() {
        const { guardrails } = yield* withRules([AWS])
        for (const depth of [200, 20_000]) {
          const text = `{"model":"m","messages":[{"role":"user","content":${"[".repeat(depth)}"${KEY}"${
            "]".repeat(depth)
          }}]}`
          const outcome = yield* evaluateText(guardrails, "chat", text)
          assert.deepStrictEqual([outcome.decision, outcome.uninspectable], ["block", true], String(depth))
        }
        // Brackets and escaped quotes inside strings are text, not nesting.
        const bracketsInText = `{"model":"m","messages":[{"role":"user","content":"${"[{\\\"".repeat(300)}"}]}`
        assert.strictEqual((yield* evaluateText(guardrails, "chat", bracketsInText)).decision, "allow")
        const shallow = `{"model":"m","messages":[{"role":"user","content":${"[".repeat(100)}"${KEY}"${
          "]".repeat(100)
        }}]}`
        assert.strictEqual((yield* evaluateText(guardrails, "chat", shallow)).blockedBy, "aws-keys")
        // Without rules nothing is read, so nothing is refused.
        const none = yield* withRules([])
        const deep = `{"model":"m","messages":[{"role":"user","content":${"[".repeat(300)}"x"${"]".repeat(300)}}]}`
        assert.strictEqual((yield* evaluateText(none.guardrails, "chat", deep)).decision, "allow")
      }))
  })

  it.effect("a stored pattern that does not compile is skipped silently and listed as compiles: false", () =>
    Effect.gen(function*() {
      const { guardrails, store } = yield* withRules([
        { name: "flag-all", rule_type: "blocked_pattern", action: "flag", pattern: "hello", priority: 50 }
      ])
      // Older data or a direct write: RE2 refuses lookbehind.
      yield* insertDirect(store, { name: "broken", pattern: "(?<=x)hello", action: "block", priority: 1 })
      yield* guardrails.invalidate(ORG)
      const { outcome } = yield* run(guardrails, "chat", {
        model: "m",
        messages: [{ role: "user", content: "xhello" }]
      })
      assert.strictEqual(outcome.decision, "flag")
      assert.deepStrictEqual(outcome.rules, ["flag-all"])
      const listed = yield* guardrails.list(ORG)
      const broken = listed.find((r) => r.name === "broken")!
      assert.deepStrictEqual([broken.enabled, broken.compiles], [true, false])
      assert.isTrue(listed.find((r) => r.name === "flag-all")!.compiles)
    }))

  it.effect("create and update refuse a pattern RE2 does not compile, with the compiler's message", () =>
    Effect.gen(function*() {
      const { guardrails } = yield* withRules([])
      const refused = yield* Effect.flip(
        guardrails.create(ORG, { name: "bad", rule_type: "blocked_pattern", pattern: "(a" })
      )
      assert.strictEqual(refused.reason._tag, "GuardrailRuleInvalid")
      assert.strictEqual(refused.status, 400)
      assert.strictEqual(refused.message, "pattern does not compile: missing ): (a")
      const backref = yield* Effect.flip(
        guardrails.create(ORG, { name: "bad", rule_type: "blocked_pattern", pattern: "(a)\\1" })
      )
      assert.include(backref.message, "invalid escape sequence")
      assert.lengthOf(yield* guardrails.list(ORG), 0)
      const ok = yield* guardrails.create(ORG, { name: "ok", rule_type: "blocked_pattern", pattern: "a+" })
      const update = yield* Effect.flip(guardrails.update(ORG, ok.uuid, { pattern: "(?=a)" }))
      assert.strictEqual(update.reason._tag, "GuardrailRuleInvalid")
      assert.strictEqual((yield* guardrails.show(ORG, ok.uuid)).pattern, "a+")
    }))

  it.effect("management: defaults, disable, update, remove, duplicate names, other organizations", () =>
    Effect.gen(function*() {
      const { guardrails } = yield* withRules([])
      const rule = yield* guardrails.create(ORG, { name: "codes", rule_type: "blocked_pattern", pattern: "codes" })
      assert.deepStrictEqual([rule.action, rule.priority, rule.enabled, rule.compiles], ["block", 100, true, true])
      const doc = { model: "m", messages: [{ role: "user", content: "codes" }] }
      assert.strictEqual((yield* run(guardrails, "chat", doc)).outcome.decision, "block")
      yield* guardrails.setEnabled(ORG, rule.uuid, false)
      assert.strictEqual((yield* run(guardrails, "chat", doc)).outcome.decision, "allow")
      yield* guardrails.update(ORG, rule.uuid, { enabled: true, action: "flag" })
      assert.strictEqual((yield* run(guardrails, "chat", doc)).outcome.decision, "flag")
      const duplicate = yield* Effect.flip(
        guardrails.create(ORG, { name: "codes", rule_type: "pii_redact", pattern: "x" })
      )
      assert.include(duplicate.message, "already exists")
      const other = "00000000-0000-4000-8000-000000000001"
      const foreign = yield* Effect.flip(guardrails.show(other, rule.uuid))
      assert.strictEqual(foreign.reason._tag, "GuardrailRuleNotFound")
      assert.strictEqual(foreign.status, 404)
      const dry = yield* guardrails.check(ORG, "the codes")
      assert.deepStrictEqual(dry, { decision: "flag", rules: ["codes"], redactions: 0 })
      yield* guardrails.remove(ORG, rule.uuid)
      assert.strictEqual((yield* run(guardrails, "chat", doc)).outcome.decision, "allow")
      const delimiter = yield* guardrails.create(ORG, {
        name: "seals",
        rule_type: "delimiter_integrity",
        action: "block"
      })
      assert.isNull(delimiter.pattern)
      assert.deepStrictEqual(yield* guardrails.delimiterIntegrity(ORG), [
        { uuid: delimiter.uuid, name: "seals", action: "block" }
      ])
    }))

  describe("when the rules cannot be loaded", () => {
    it.effect("fails closed with GuardrailsUnavailable (503)", () =>
      Effect.gen(function*() {
        const guardrails = yield* makeGuardrails({ store: unreachable, ttl: Duration.minutes(1), failOpen: false })
          .pipe(Effect.provide(Invalidation.layerMemory))
        const error = yield* Effect.flip(guardrails.evaluate(ORG, "chat", Buffer.from("{}"), {}))
        assert.strictEqual(error._tag, "GuardrailsUnavailable")
        assert.strictEqual(error.status, 503)
        const delimiter = yield* Effect.flip(guardrails.delimiterIntegrity(ORG))
        assert.strictEqual(delimiter._tag, "GuardrailsUnavailable")
      }))

    it.effect("VDB_GATEWAY_FAIL_OPEN lets guardrails pass", () =>
      Effect.gen(function*() {
        const guardrails = yield* makeGuardrails({ store: unreachable, ttl: Duration.minutes(1), failOpen: true }).pipe(
          Effect.provide(Invalidation.layerMemory)
        )
        const outcome = yield* guardrails.evaluate(ORG, "chat", Buffer.from("{}"), {})
        assert.deepStrictEqual([outcome.decision, outcome.failedOpen], ["allow", true])
        assert.deepStrictEqual(yield* guardrails.delimiterIntegrity(ORG), [])
      }))

    it.effect("a warm cache keeps enforcing while the store is unreachable", () =>
      Effect.gen(function*() {
        const store = memoryGuardrailStore()
        let down = false
        const flaky: GuardrailStore = {
          ...store,
          version: (org) => down ? Effect.die(new Error("connection refused")) : store.version(org),
          list: (org) => down ? Effect.die(new Error("connection refused")) : store.list(org)
        }
        const guardrails = yield* makeGuardrails({ store: flaky, ttl: Duration.zero, failOpen: false }).pipe(
          Effect.provide(Invalidation.layerMemory)
        )
        yield* guardrails.create(ORG, { name: "codes", rule_type: "blocked_pattern", pattern: "codes" })
        const doc = { model: "m", messages: [{ role: "user", content: "codes" }] }
        assert.strictEqual((yield* run(guardrails, "chat", doc)).outcome.decision, "block")
        down = true
        assert.strictEqual((yield* run(guardrails, "chat", doc)).outcome.decision, "block")
      }))

    it.effect("reads VDB_GATEWAY_FAIL_OPEN through Config", () =>
      Effect.gen(function*() {
        const read = (env: Record<string, string>) => failOpenConfig.parse(ConfigProvider.fromUnknown(env))
        assert.isFalse(yield* read({}))
        assert.isTrue(yield* read({ VDB_GATEWAY_FAIL_OPEN: "true" }))
      }))
  })
})

const unreachable: GuardrailStore = {
  ...memoryGuardrailStore(),
  version: () => Effect.die(new Error("connection refused")),
  list: () => Effect.die(new Error("connection refused"))
}

const insertDirect = (
  store: GuardrailStore,
  rule: { name: string; pattern: string; action: "block" | "flag" | "redact"; priority: number }
) =>
  store.insert({
    uuid: randomUUID(),
    org_uuid: ORG,
    rule_type: "blocked_pattern",
    enabled: true,
    created_at: new Date(),
    updated_at: new Date(),
    ...rule
  })
