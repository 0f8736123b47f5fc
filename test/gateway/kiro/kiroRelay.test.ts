import { Redacted } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { send } from "../http.ts"
import { type KiroGateway, ORG, PROFILE_ARN, REFRESH_TOKEN, run, SERVICE_KEY, startKiroGateway } from "./harness.ts"

let gateway: KiroGateway
beforeAll(async () => {
  gateway = await startKiroGateway()
})
afterAll(() => gateway.close())
afterEach(async () => {
  gateway.kiro.reset()
  for (const entry of await run(gateway.policies.list(ORG))) await run(gateway.policies.remove(ORG, entry.uuid))
  for (const rule of await run(gateway.guardrails.list(ORG))) await run(gateway.guardrails.remove(ORG, rule.uuid))
})

const signIn = (extra: Record<string, unknown> = {}) =>
  run(
    gateway.vault.set(
      ORG,
      "kiro",
      Redacted.make(JSON.stringify({ refreshToken: REFRESH_TOKEN, authMethod: "social", ...extra }))
    )
  )

const conversation = (content: string, extra: Record<string, unknown> = {}) => ({
  conversationState: {
    chatTriggerType: "MANUAL",
    conversationId: "c-1",
    currentMessage: { userInputMessage: { content, modelId: "claude-sonnet-4.5", origin: "AI_EDITOR" } },
    history: [
      { userInputMessage: { content: "earlier question", modelId: "claude-sonnet-4.5", origin: "AI_EDITOR" } },
      { assistantResponseMessage: { content: "earlier answer" } }
    ]
  },
  ...extra
})

const generate = (body: unknown, headers: Record<string, string> = {}) =>
  send(`${gateway.url}/kiro/${ORG}/v1/generateAssistantResponse`, {
    headers: { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

const listModels = (query = "") =>
  send(`${gateway.url}/kiro/${ORG}/v1/ListAvailableModels${query}`, {
    method: "GET",
    headers: { authorization: `Bearer ${SERVICE_KEY}` }
  })

describe("POST /kiro/{org}/v1/generateAssistantResponse", () => {
  it("relays the event stream byte for byte with a minted token, and logs event types and usage", async () => {
    await signIn({ profileArn: PROFILE_ARN })
    await run(gateway.inferenceLog.setEnabled(ORG, true))
    const body = JSON.stringify(conversation("hello"))
    const reply = await generate(body)
    expect(reply.status).toBe(200)
    expect(reply.headers["content-type"]).toBe("application/vnd.amazon.eventstream")
    expect(reply.headers["x-gateway-firewall-decision"]).toBe("allow")
    expect(reply.body.equals(gateway.kiro.stream)).toBe(true)

    const upstream = gateway.kiro.calls[0]!
    expect(upstream.url).toBe("/generateAssistantResponse")
    expect(upstream.headers["authorization"]).toBe("Bearer access-token-1")
    // The profile ARN from the sign-in goes first; every byte the client sent follows unchanged.
    expect(upstream.body.toString()).toBe(`{"profileArn":${JSON.stringify(PROFILE_ARN)},${body.slice(1)}`)

    const [entry] = await run(gateway.inferenceLog.recent(ORG, 1))
    expect(entry).toMatchObject({
      provider: "kiro",
      surface: "kiro",
      model: "claude-sonnet-4.5",
      status: 200,
      responseBytes: gateway.kiro.stream.length,
      stream: {
        events: { assistantResponseEvent: 2, toolUseEvent: 2, meteringEvent: 2 },
        exceptions: ["ThrottlingException"],
        usage: 0.75,
        unit: "credit",
        undecodable: false
      }
    })
    expect(JSON.stringify(entry)).not.toContain("Hello")
    await run(gateway.inferenceLog.setEnabled(ORG, false))
  })

  it("keeps a client's own profileArn and reuses the token across requests", async () => {
    await signIn({ profileArn: PROFILE_ARN })
    const body = JSON.stringify({ profileArn: "arn:client", ...conversation("hi") })
    expect((await generate(body)).status).toBe(200)
    expect((await generate(body)).status).toBe(200)
    expect(gateway.kiro.calls.map((call) => call.body.toString())).toEqual([body, body])
    // The token minted by the first test is still fresh: the sign-in did not change, no new refresh.
    expect(gateway.kiro.refreshes.length).toBe(0)
  })

  it("a refused refresh is 502 upstream_auth_failed, with no token or sign-in in the body", async () => {
    await signIn({ refreshToken: "a-different-refresh-token" })
    gateway.kiro.auth = (_n, body) => ({ status: 400, body: { error: "invalid_grant", token: body.refreshToken } })
    const reply = await generate(conversation("hello"))
    expect(reply.status).toBe(502)
    expect(reply.json().error).toMatchObject({ code: "upstream_auth_failed" })
    expect(reply.body.toString()).not.toContain("a-different-refresh-token")
    expect(reply.body.toString()).not.toContain("access-token")
    expect(gateway.kiro.calls.length).toBe(0)
  })

  it("a sign-in service failing (5xx, 429) is 502 upstream_auth_failed that does not tell the user to store a new sign-in", async () => {
    for (const status of [500, 503, 429]) {
      await signIn({ refreshToken: `refresh-while-failing-${status}` })
      gateway.kiro.auth = () => ({ status, body: { error: "try later" } })
      const reply = await generate(conversation("hello"))
      expect(reply.status, String(status)).toBe(502)
      expect(reply.json().error, String(status)).toMatchObject({
        code: "upstream_auth_failed",
        message: "the kiro sign-in service could not be reached"
      })
    }
  })

  it("an upstream 403 is relayed and the token is minted again next time", async () => {
    await signIn({ refreshToken: "refresh-for-403" })
    gateway.kiro.apiStatus = 403
    expect((await generate(conversation("hello"))).status).toBe(403)
    gateway.kiro.apiStatus = 200
    expect((await generate(conversation("hello"))).status).toBe(200)
    expect(gateway.kiro.refreshes.length).toBe(2)
  })

  it("a guardrail blocks on conversationState text, and nothing is sent", async () => {
    await signIn()
    await run(
      gateway.guardrails.create(ORG, { name: "no-secret", rule_type: "blocked_pattern", pattern: "TOP-SECRET" })
    )
    const body = conversation("fine")
    body.conversationState.history[0]!.userInputMessage!.content = "the TOP-SECRET plan"
    const reply = await generate(body)
    expect(reply.status).toBe(403)
    expect(reply.json().error).toMatchObject({ code: "request_blocked", blocked_by: "no-secret" })
    expect(reply.body.toString()).not.toContain("TOP-SECRET plan")
    expect(gateway.kiro.calls.length).toBe(0)
  })

  it("a redaction changes only the redacted bytes of the current message and the history", async () => {
    await signIn({ profileArn: undefined })
    await run(gateway.guardrails.create(ORG, { name: "ssn", rule_type: "pii_redact", pattern: "\\d{3}-\\d{2}-\\d{4}" }))
    // Spacing and key order a client might send: the relay must keep them.
    const body =
      `{ "conversationState" : {"currentMessage":{"userInputMessage":{"content":"my ssn is 123-45-6789","modelId":"claude-sonnet-4.5"}},` +
      `"history":[{"userInputMessage":{"content":"old 987-65-4321 here"}},{"assistantResponseMessage":{"content":"noted 555-55-5555","toolUses":[{"input":{"ssn":"111-22-3333"}}]}}]},"x":1 }`
    const reply = await generate(body)
    expect(reply.status).toBe(200)
    expect(reply.headers["x-gateway-firewall-decision"]).toBe("redact")
    const sent = gateway.kiro.calls[0]!.body.toString()
    expect(sent).toBe(
      body.replace("123-45-6789", "[REDACTED]").replace("987-65-4321", "[REDACTED]").replace(
        "555-55-5555",
        "[REDACTED]"
      )
    )
    // A model's tool input is its output, never rewritten.
    expect(sent).toContain("111-22-3333")
  })

  it("the model policy applies to currentMessage.userInputMessage.modelId", async () => {
    await signIn()
    await run(gateway.policies.add(ORG, { kind: "model", effect: "deny", provider: "kiro", value: "claude-opus-4.5" }))
    const denied = conversation("hi")
    denied.conversationState.currentMessage.userInputMessage.modelId = "claude-opus-4.5"
    const reply = await generate(denied)
    expect(reply.status).toBe(403)
    expect(reply.json().error.code).toBe("model_denied")
    expect((await generate(conversation("hi"))).status).toBe(200)
  })

  it("the tool policy applies to the current message's tools: a deny refuses, a strip takes the tool out of the bytes", async () => {
    await signIn()
    const tool = (name: string) => ({
      toolSpecification: { name, description: `the ${name} tool`, inputSchema: { json: { type: "object" } } }
    })
    const withTools = (...names: Array<string>) => {
      const body = conversation("hi")
      ;(body.conversationState.currentMessage.userInputMessage as Record<string, unknown>).userInputMessageContext = {
        tools: names.map(tool)
      }
      return JSON.stringify(body)
    }
    await run(gateway.policies.add(ORG, { kind: "tool", effect: "deny", provider: "kiro", value: "shell" }))
    const denied = await generate(withTools("search", "shell"))
    expect(denied.status).toBe(403)
    expect(denied.json().error.code).toBe("tool_denied")
    expect(gateway.kiro.calls.filter((c) => c.url.includes("generateAssistantResponse"))).toHaveLength(0)

    await run(gateway.policies.add(ORG, { kind: "tool", effect: "strip", provider: "kiro", value: "fetch" }))
    const body = withTools("search", "fetch")
    const stripped = await generate(body)
    expect(stripped.status).toBe(200)
    expect(stripped.headers["x-gateway-firewall-stripped"]).toBe("1")
    expect(gateway.kiro.calls.at(-1)!.body.toString()).toBe(body.replace(`,${JSON.stringify(tool("fetch"))}`, ""))
  })

  it("refuses a body that is not a JSON object, and an unauthenticated caller", async () => {
    expect((await generate("[1,2]")).json().error.code).toBe("invalid_json")
    const anonymous = await send(`${gateway.url}/kiro/${ORG}/v1/generateAssistantResponse`, { body: "{}" })
    expect(anonymous.status).toBe(401)
    expect(
      (await send(`${gateway.url}/openai/${ORG}/v1/generateAssistantResponse`, {
        headers: { authorization: `Bearer ${SERVICE_KEY}` },
        body: "{}"
      })).json().error.code
    ).toBe("unsupported_api")
  })

  it("with no sign-in stored: 403 provider_key_missing; with a stored value that is no sign-in: 502", async () => {
    await run(gateway.vault.remove(ORG, "kiro"))
    expect((await generate(conversation("hi"))).json().error.code).toBe("provider_key_missing")
    await run(gateway.vault.set(ORG, "kiro", Redacted.make("not json")))
    const reply = await generate(conversation("hi"))
    expect(reply.status).toBe(502)
    expect(reply.json().error.code).toBe("provider_credential_invalid")
    expect(reply.body.toString()).not.toContain("not json")
  })
})

describe("GET /kiro/{org}/v1/ListAvailableModels", () => {
  it("returns upstream's live list, less the models the policy refuses", async () => {
    await signIn({ profileArn: PROFILE_ARN })
    const all = await listModels("?origin=AI_EDITOR")
    expect(all.status).toBe(200)
    expect(all.json()).toEqual(gateway.kiro.listing)
    const call = gateway.kiro.calls[0]!
    expect(call.method).toBe("GET")
    expect(call.url).toBe(`/ListAvailableModels?origin=AI_EDITOR&profileArn=${encodeURIComponent(PROFILE_ARN)}`)
    expect(call.headers["authorization"]).toMatch(/^Bearer access-token-/)

    await run(gateway.policies.add(ORG, { kind: "model", effect: "deny", provider: "kiro", value: "claude-opus-4.5" }))
    const denied = (await listModels()).json()
    expect(denied.models.map((m: any) => m.modelId)).toEqual(["claude-sonnet-4.5", "claude-haiku-4.5"])
    expect(denied.defaultModel).toBeUndefined()
    expect(denied.nextToken).toBeNull()

    await run(
      gateway.policies.add(ORG, { kind: "model", effect: "allow", provider: "kiro", value: "claude-haiku-4.5" })
    )
    expect((await listModels()).json().models).toEqual([{
      modelId: "claude-haiku-4.5",
      modelName: "Claude Haiku 4.5",
      rateMultiplier: 0.4
    }])
  })

  it("an explicit provider deny refuses before anything is minted or called", async () => {
    await signIn({ refreshToken: "refresh-for-deny" })
    await run(gateway.policies.add(ORG, { kind: "provider", effect: "deny", value: "kiro" }))
    const reply = await listModels()
    expect(reply.status).toBe(403)
    expect(reply.json().error.code).toBe("provider_denied")
    expect(gateway.kiro.refreshes.length + gateway.kiro.calls.length).toBe(0)
  })
})
