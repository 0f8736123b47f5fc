import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { Nonces } from "../../../src/gateway/nonces/Nonces.ts"
import {
  findSealedBlocks,
  inspectSealedBlocks,
  integrityOf,
  type NonceMode,
  textSegments
} from "../../../src/gateway/nonces/SealedBlocks.ts"

const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"
const OTHER = "0b0e6d8a-1111-4c5b-8e7f-0a1b2c3d4e5f"
const nonces = Nonces.make((org) => Effect.succeed(Redacted.make(`secret-of-${org}`)))

const block = (kind: string, nonce: string, content: string, integrity: string | null = integrityOf(content)) =>
  `<${kind} nonce="${nonce}"${integrity === null ? "" : ` integrity="${integrity}"`}>${content}</${kind}>`

const inspectChat = (text: string, mode: NonceMode, org = ORG) => {
  const body = { model: "m", messages: [{ role: "user", content: text }] }
  return inspectSealedBlocks({
    surface: "chat",
    raw: Buffer.from(JSON.stringify(body)),
    body,
    mode,
    checkAll: (list) => nonces.checkAll(org, list)
  })
}

describe("integrity", () => {
  it("is sha256- and padded standard base64 of the content's UTF-8 bytes (SRI)", () => {
    // printf abc | openssl dgst -sha256 -binary | base64
    assert.strictEqual(integrityOf(""), "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
    assert.strictEqual(integrityOf("abc"), "sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=")
  })
})

describe("the nonce state table", () => {
  for (const mode of ["observe", "enforce"] as const) {
    it.effect(`${mode}: verified, unknown, expired, foreign, tampered and missing hash`, () =>
      Effect.gen(function*() {
        const [old] = (yield* nonces.issue(ORG, 1)).nonces
        yield* TestClock.adjust("23 hours")
        const [fresh] = (yield* nonces.issue(ORG, 1)).nonces
        const [foreign] = (yield* nonces.issue(OTHER, 1)).nonces
        yield* TestClock.adjust("2 hours") // `old` is now 25 hours old: expired
        const text = [
          block("system", fresh!, "verified"), // verified
          block("plan", old!, "expired"), // unknown (expired)
          block("goal", foreign!, "foreign"), // unknown (issued to another principal)
          block("agent", "never.issued", "forged"), // unknown (never issued)
          block("skills", fresh!, "tampered", integrityOf("something else")), // tampered
          block("directive", fresh!, "unhashed", null), // tampered (hash required)
          block("hooks", fresh!, "no hash needed", null) // verified: hooks need no hash
        ].join("|")
        const outcome = yield* inspectChat(text, mode)
        assert.deepStrictEqual(outcome.summary, {
          mode,
          verified: 2,
          unknown: 3,
          tampered: 2,
          stripped: mode === "enforce" ? 5 : 0
        })
        if (mode === "observe") assert.isUndefined(outcome.body)
        else {
          const sent = (outcome.body as any).messages[0].content
          assert.strictEqual(sent, [block("system", fresh!, "verified"), "", "", "", "", "", block("hooks", fresh!, "no hash needed", null)].join("|"))
        }
      }))
  }

  it.effect("a request without sealed blocks has no summary and checks no nonce", () =>
    Effect.gen(function*() {
      let checked = false
      const body = { model: "m", messages: [{ role: "user", content: "<system>plain</system>" }] }
      const outcome = yield* inspectSealedBlocks({
        surface: "chat",
        raw: Buffer.from(JSON.stringify(body)),
        body,
        mode: "enforce",
        checkAll: () => Effect.sync(() => (checked = true, new Map()))
      })
      assert.isUndefined(outcome.summary)
      assert.isFalse(checked)
    }))

  it.effect("an attribute written with spaces around = is a block too, in the walk's quick test as in the reader", () =>
    Effect.gen(function*() {
      const text = `<attachment nonce = "never.issued">forged</attachment> and <system  nonce ="x" integrity= "${integrityOf("y")}">z</system>`
      const outcome = yield* inspectChat(text, "enforce")
      assert.deepStrictEqual(outcome.summary, { mode: "enforce", verified: 0, unknown: 0, tampered: 2, stripped: 2 })
      assert.strictEqual((outcome.body as any).messages[0].content, " and ")
    }))

  it.effect("checks each distinct nonce once per request", () =>
    Effect.gen(function*() {
      const [nonce] = (yield* nonces.issue(ORG, 1)).nonces
      const asked: Array<ReadonlyArray<string>> = []
      const body = { model: "m", messages: [{ role: "user", content: block("plan", nonce!, "a") + block("goal", nonce!, "b") }] }
      yield* inspectSealedBlocks({
        surface: "chat",
        raw: Buffer.from(JSON.stringify(body)),
        body,
        mode: "observe",
        checkAll: (list) => (asked.push(list), nonces.checkAll(ORG, list))
      })
      assert.deepStrictEqual(asked, [[nonce]])
    }))
})

describe("finding blocks", () => {
  it("reads the attributes in any order, and needs a nonce and a closing tag", () => {
    const found = findSealedBlocks(
      `<plan integrity="sha256-x" nonce="n1">a</plan> <plan>no nonce</plan> <goal nonce="n2">unclosed <tools nonce="n3">ok</tools>`
    )
    assert.deepStrictEqual(found.map((b) => [b.kind, b.nonce, b.integrity, b.content]), [
      ["plan", "n1", "sha256-x", "a"],
      ["tools", "n3", undefined, "ok"]
    ])
  })

  it("stays linear on many unclosed openers", () => {
    const text = `<plan nonce="n">`.repeat(200_000)
    const started = performance.now()
    assert.deepStrictEqual(findSealedBlocks(text), [])
    assert.isBelow(performance.now() - started, 1_000)
  })

  it("hashes multi-byte content over its UTF-8 bytes", () => {
    const [found] = findSealedBlocks(block("attachment", "n", "héllo ✓ 𝄞"))
    assert.strictEqual(found!.integrity, integrityOf("héllo ✓ 𝄞"))
  })
})

describe("text segments", () => {
  it("cover system prompts, message text and tool results, never tool-call arguments", () => {
    const messages = textSegments("messages", {
      system: [{ type: "text", text: "sys" }],
      messages: [
        { role: "user", content: "u1" },
        { role: "assistant", content: [{ type: "text", text: "a1" }, { type: "tool_use", id: "t", name: "x", input: { q: "args" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: [{ type: "text", text: "result" }] }] }
      ]
    })
    assert.deepStrictEqual(messages.map((s) => s.text), ["sys", "u1", "a1", "result"])
    const chat = textSegments("chat", {
      messages: [
        { role: "assistant", content: null, tool_calls: [{ function: { name: "x", arguments: "args" } }] },
        { role: "tool", content: "tool output" }
      ]
    })
    assert.deepStrictEqual(chat.map((s) => s.text), ["tool output"])
    const responses = textSegments("responses", {
      instructions: "ins",
      input: [
        { type: "message", role: "user", content: [{ type: "input_text", text: "in" }] },
        { type: "function_call", name: "x", arguments: "args" },
        { type: "function_call_output", call_id: "c", output: "out" }
      ]
    })
    assert.deepStrictEqual(responses.map((s) => s.text), ["ins", "in", "out"])
  })
})

describe("enforce-mode removal (property)", () => {
  it.effect("removes exactly the unverified blocks and keeps every other character", () =>
    Effect.gen(function*() {
      const fc = yield* Effect.promise(() => import("fast-check"))
      const [nonce] = (yield* nonces.issue(ORG, 1)).nonces
      // Plain text never forms a tag: `<` is replaced.
      const plain = fc.string({ maxLength: 20 }).map((s) => s.replaceAll("<", "("))
      const piece = fc.record({
        before: plain,
        content: plain,
        state: fc.constantFrom("verified", "unknown", "tampered")
      })
      const samples = fc.sample(fc.array(piece, { maxLength: 6 }), 200)
      for (const pieces of samples) {
        const text = pieces.map((p) =>
          p.before + (p.state === "verified"
            ? block("plan", nonce!, p.content)
            : p.state === "unknown"
            ? block("goal", "never.issued", p.content)
            : block("diagnostics", nonce!, p.content, null))
        ).join("")
        const expected = pieces.map((p) => p.before + (p.state === "verified" ? block("plan", nonce!, p.content) : "")).join("")
        const outcome = yield* inspectChat(text, "enforce")
        const sent = outcome.body === undefined ? text : (outcome.body as any).messages[0].content
        assert.strictEqual(sent, expected)
        assert.strictEqual(outcome.summary?.stripped ?? 0, pieces.filter((p) => p.state !== "verified").length)
      }
    }))
})
