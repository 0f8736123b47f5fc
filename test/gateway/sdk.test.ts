import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { ANTHROPIC_KEY, type Gateway, OPENAI_KEY, ORG, OTHER_ORG, SERVICE_KEY, startGateway } from "./harness.ts"

let gateway: Gateway
beforeAll(async () => {
  gateway = await startGateway()
})
afterAll(() => gateway.close())
beforeEach(() => {
  gateway.upstream.reset()
  gateway.backends.authDown = false
  gateway.backends.providerDown = false
})

const openai = (org = ORG, apiKey = SERVICE_KEY) =>
  new OpenAI({ apiKey, baseURL: `${gateway.url}/openai/${org}/v1`, maxRetries: 0 })
const anthropic = (org = ORG, apiKey = SERVICE_KEY) =>
  new Anthropic({ apiKey, baseURL: `${gateway.url}/anthropic/${org}`, maxRetries: 0 })

describe("official openai SDK through the gateway", () => {
  it("completes a chat request with the provider key injected", async () => {
    const completion = await openai().chat.completions.create({
      model: "gpt-4.1-mini",
      messages: [{ role: "user", content: "hi" }]
    })
    expect(completion.choices[0]!.message.content).toBe("Hello from the fake upstream.")
    const received = gateway.upstream.received[0]!
    expect(received.url).toBe("/v1/chat/completions")
    expect(received.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`)
  })

  it("streams a chat completion", async () => {
    const stream = await openai().chat.completions.create({
      model: "gpt-4.1-mini",
      messages: [{ role: "user", content: "hi" }],
      stream: true
    })
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    expect(text).toBe("Hello wörld ✓")
  })

  it("uses the responses API, plain and streamed", async () => {
    const response = await openai().responses.create({ model: "gpt-4.1", input: "hi" })
    expect(response.output_text).toBe("Hello from responses.")
    const events: Array<string> = []
    for await (const event of await openai().responses.create({ model: "gpt-4.1", input: "hi", stream: true })) {
      events.push(event.type)
    }
    expect(events).toEqual(["response.created", "response.output_text.delta", "response.completed"])
  })

  it("lists models without calling the provider", async () => {
    const page = await openai().models.list()
    expect(page.data.map((model) => model.id)).toContain("gpt-4.1")
    expect(gateway.upstream.received).toHaveLength(0)
  })

  it("receives gateway errors as APIError with status and code", async () => {
    const wrongKey = await openai(ORG, "wrong").chat.completions.create({ model: "m", messages: [] }).catch((e) => e)
    expect(wrongKey).toBeInstanceOf(OpenAI.AuthenticationError)
    expect(wrongKey.status).toBe(401)
    expect(wrongKey.code).toBe("invalid_api_key")
    expect(wrongKey.headers.get("x-gateway-firewall-request-id")).toMatch(/^[0-9a-f-]{36}$/)

    const providerKeyAsServiceKey = await openai(ORG, OPENAI_KEY).chat.completions.create({ model: "m", messages: [] })
      .catch((e) => e)
    expect(providerKeyAsServiceKey.status).toBe(401)
    expect(providerKeyAsServiceKey.code).toBe("invalid_api_key")

    const missing = await openai(OTHER_ORG).chat.completions.create({ model: "m", messages: [] }).catch((e) => e)
    expect(missing.status).toBe(401)

    const unsupported = await new OpenAI({
      apiKey: SERVICE_KEY,
      baseURL: `${gateway.url}/anthropic/${ORG}/v1`,
      maxRetries: 0
    }).chat.completions.create({ model: "m", messages: [] }).catch((e) => e)
    expect(unsupported).toBeInstanceOf(OpenAI.NotFoundError)
    expect(unsupported.code).toBe("unsupported_api")
    expect(unsupported.message).toContain(`POST /anthropic/{org}/v1/messages`)

    gateway.backends.authDown = true
    const down = await openai().chat.completions.create({ model: "m", messages: [] }).catch((e) => e)
    expect(down).toBeInstanceOf(OpenAI.InternalServerError)
    expect(down.status).toBe(503)
    expect(gateway.upstream.received).toHaveLength(0)
  })
})

describe("official anthropic SDK through the gateway", () => {
  it("completes a message with x-api-key and anthropic-version injected", async () => {
    const message = await anthropic().messages.create({
      model: "claude-sonnet-4-5",
      max_tokens: 64,
      messages: [{ role: "user", content: "hi" }]
    })
    expect(message.content[0]).toMatchObject({ type: "text", text: "Hello from the fake Anthropic." })
    const received = gateway.upstream.received[0]!
    expect(received.url).toBe("/v1/messages")
    expect(received.headers["x-api-key"]).toBe(ANTHROPIC_KEY)
    expect(received.headers.authorization).toBeUndefined()
    // The SDK sends its own version header: the client's value wins over the provider default.
    expect(received.headers["anthropic-version"]).toBeDefined()
  })

  it("streams a message", async () => {
    const stream = anthropic().messages.stream({
      model: "claude-sonnet-4-5",
      max_tokens: 64,
      messages: [{ role: "user", content: "hi" }]
    })
    const final = await stream.finalMessage()
    expect(final.content[0]).toMatchObject({ type: "text", text: "Hello there" })
  })

  it("counts tokens", async () => {
    const counted = await anthropic().messages.countTokens({
      model: "claude-sonnet-4-5",
      messages: [{ role: "user", content: "hi" }]
    })
    expect(counted.input_tokens).toBe(42)
    expect(gateway.upstream.received[0]!.url).toBe("/v1/messages/count_tokens")
  })

  it("receives gateway errors in the Anthropic envelope", async () => {
    const error = await anthropic(ORG, "wrong").messages.create({
      model: "claude-sonnet-4-5",
      max_tokens: 8,
      messages: [{ role: "user", content: "hi" }]
    }).catch((e) => e)
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError)
    expect(error.status).toBe(401)
    expect(error.error).toEqual({
      type: "error",
      error: { type: "authentication_error", code: "invalid_api_key", message: "invalid API key" }
    })
  })

  it("answers 503 in the Anthropic dialect when the provider-key backend is down", async () => {
    gateway.backends.providerDown = true
    const error = await anthropic().messages.create({ model: "claude-x", max_tokens: 8, messages: [] }).catch((e) => e)
    expect(error).toBeInstanceOf(Anthropic.InternalServerError)
    expect(error.status).toBe(503)
    expect(error.error.error).toMatchObject({ type: "api_error", code: "backend_unavailable" })
    expect(gateway.upstream.received).toHaveLength(0)
  })
})

describe("provider keys", () => {
  it("answers 403 provider_key_missing when the organization stored none", async () => {
    const error = await new OpenAI({ apiKey: SERVICE_KEY, baseURL: `${gateway.url}/groq/${ORG}/v1`, maxRetries: 0 })
      .chat.completions.create({ model: "llama-3.3-70b-versatile", messages: [] }).catch((e) => e)
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError)
    expect(error.code).toBe("provider_key_missing")
    expect(error.type).toBe("permission_error")
    expect(error.headers.get("x-gateway-firewall-decision")).toBe("allow")
  })
})
