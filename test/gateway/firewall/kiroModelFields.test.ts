import { Redacted } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { send } from "../http.ts"
import { type KiroGateway, ORG, REFRESH_TOKEN, run, SERVICE_KEY, startKiroGateway } from "../kiro/harness.ts"

/** Issue 32 §4 on Kiro: every `modelId` of the conversation is judged, and one that isn't a name is refused. */

let gateway: KiroGateway
beforeAll(async () => {
  gateway = await startKiroGateway()
  await run(
    gateway.vault.set(ORG, "kiro", Redacted.make(JSON.stringify({ refreshToken: REFRESH_TOKEN, authMethod: "social" })))
  )
})
afterAll(() => gateway.close())
afterEach(async () => {
  gateway.kiro.reset()
  for (const entry of await run(gateway.policies.list(ORG))) await run(gateway.policies.remove(ORG, entry.uuid))
})

const conversation = (current: unknown, earlier: unknown) => ({
  conversationState: {
    chatTriggerType: "MANUAL",
    conversationId: "c-1",
    currentMessage: { userInputMessage: { content: "hi", modelId: current, origin: "AI_EDITOR" } },
    history: [
      { userInputMessage: { content: "earlier question", modelId: earlier, origin: "AI_EDITOR" } },
      { assistantResponseMessage: { content: "earlier answer" } }
    ]
  }
})

const generate = (body: unknown) =>
  send(`${gateway.url}/kiro/${ORG}/v1/generateAssistantResponse`, {
    headers: { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

const deny = (value: string) =>
  run(gateway.policies.add(ORG, { kind: "model", effect: "deny", provider: "kiro", value }))

describe("Kiro modelId", () => {
  it("a denied model in a history turn's modelId is model_denied, naming where", async () => {
    await deny("claude-opus-4.5")
    const reply = await generate(conversation("claude-sonnet-4.5", "claude-opus-4.5"))
    expect(reply.status).toBe(403)
    expect(reply.json().error.code).toBe("model_denied")
    expect(reply.json().error.message).toContain("conversationState.history[0].userInputMessage.modelId")
    expect(gateway.kiro.calls).toHaveLength(0)
    expect((await generate(conversation("claude-sonnet-4.5", "claude-haiku-4.5"))).status).toBe(200)
  })

  it("a modelId that is not a string is refused (request_uninspectable), never forwarded", async () => {
    await deny("claude-opus-4.5")
    for (
      const body of [
        conversation(["claude-opus-4.5"], "claude-haiku-4.5"),
        conversation("claude-sonnet-4.5", { id: "claude-opus-4.5" })
      ]
    ) {
      const reply = await generate(body)
      expect(reply.status).toBe(403)
      expect(reply.json().error.code).toBe("request_uninspectable")
    }
    expect(gateway.kiro.calls).toHaveLength(0)
  })
})
