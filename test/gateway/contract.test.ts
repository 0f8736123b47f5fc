import { Effect, Schema } from "effect"
import { FetchHttpClient } from "effect/http"
import { HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { gzipSync } from "node:zlib"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { AnthropicErrorEnvelope, OpenAiErrorEnvelope } from "../../schema/GatewayErrorEnvelope.ts"
import { PolicyRefusal } from "../../schema/PolicyRefusal.ts"
import { encodeAnthropic, encodeOpenAi } from "../../src/gateway/dialects/Dialect.ts"
import { describeFailure } from "../../src/gateway/dialects/GatewayFailure.ts"
import { GatewayApi } from "../../src/gateway/GatewayApi.ts"
import { type Gateway, ORG, SERVICE_KEY, startGateway } from "./harness.ts"
import { send } from "./http.ts"

let gateway: Gateway
beforeAll(async () => {
  gateway = await startGateway()
})
afterAll(() => gateway.close())
beforeEach(() => gateway.upstream.reset())

const auth = { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" }
const decodeOpenAi = Schema.decodeUnknownSync(OpenAiErrorEnvelope, { onExcessProperty: "error" })
const decodeAnthropic = Schema.decodeUnknownSync(AnthropicErrorEnvelope, { onExcessProperty: "error" })

describe("the gateway's OpenAPI document", () => {
  it("is published at /openapi.json on the gateway port, with every route and both envelopes", async () => {
    const reply = await send(`${gateway.url}/openapi.json`, { method: "GET" })
    expect(reply.status).toBe(200)
    expect(reply.headers["content-type"]).toMatch(/^application\/json/)
    const doc = reply.json()
    expect(doc.openapi).toMatch(/^3\./)
    const paths = Object.keys(doc.paths)
    for (
      const path of [
        "/{provider}/{org}/v1/chat/completions",
        "/{provider}/{org}/v1/responses",
        "/{provider}/{org}/v1/messages",
        "/{provider}/{org}/v1/messages/count_tokens",
        "/{provider}/{org}/v1/models",
        "/{provider}/{org}/v1/nonces",
        "/{provider}/v1/chat/completions"
      ]
    ) expect(paths).toContain(path)
    const chat = doc.paths["/{provider}/{org}/v1/chat/completions"].post
    expect(chat.parameters.map((p: any) => p.name).sort()).toEqual(["org", "provider"])
    for (const status of ["400", "401", "403", "404", "413", "415", "500", "502", "503"]) {
      expect(chat.responses[status], status).toBeDefined()
    }
    // The two dialects are two different error shapes in the document.
    const messages = doc.paths["/{provider}/{org}/v1/messages"].post
    expect(JSON.stringify(messages.responses["403"])).not.toBe(JSON.stringify(chat.responses["403"]))
  })
})

describe("errors through the surface's envelope schema", () => {
  it("chat-style routes answer every failure in the OpenAI envelope", async () => {
    const unauthorized = await send(`${gateway.url}/openai/${ORG}/v1/chat/completions`, {
      headers: { authorization: "Bearer nope", "content-type": "application/json" },
      body: "{}"
    })
    expect(unauthorized.status).toBe(401)
    expect(decodeOpenAi(unauthorized.json()).error.code).toBe("invalid_api_key")

    const invalid = await send(`${gateway.url}/openai/${ORG}/v1/chat/completions`, { headers: auth, body: "{not json" })
    expect(invalid.status).toBe(400)
    expect(decodeOpenAi(invalid.json()).error).toMatchObject({ code: "invalid_json", type: "invalid_request_error" })

    // A compressed body is refused by its header, before a byte of it is read or forwarded.
    for (const coding of ["gzip", "br", "GZIP", "identity, gzip", "x-custom"]) {
      const compressed = await send(`${gateway.url}/openai/${ORG}/v1/chat/completions`, {
        headers: { ...auth, "content-encoding": coding },
        body: gzipSync(JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }))
      })
      expect(compressed.status, coding).toBe(415)
      expect(compressed.headers["accept-encoding"], coding).toBe("identity")
      expect(decodeOpenAi(compressed.json()).error, coding).toMatchObject({
        code: "unsupported_content_encoding",
        type: "invalid_request_error"
      })
    }
    const identity = await send(`${gateway.url}/openai/${ORG}/v1/chat/completions`, {
      headers: { ...auth, "content-encoding": "identity" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] })
    })
    expect(identity.status).toBe(200)
    expect(gateway.upstream.received).toHaveLength(1)

    const unknown = await send(`${gateway.url}/nosuch/${ORG}/v1/chat/completions`, { headers: auth, body: "{}" })
    expect(unknown.status).toBe(404)
    expect(decodeOpenAi(unknown.json()).error.code).toBe("unknown_provider")

    const kiro = await send(`${gateway.url}/openai/${ORG}/v1/generateAssistantResponse`, { headers: auth, body: "{}" })
    expect(decodeOpenAi(kiro.json()).error.code).toMatch(/^(not_implemented|unsupported_api)$/)
  })

  it("a malformed nonce query is the dialect's 400, not the framework's", async () => {
    for (const query of ["count=0", "count=abc", "count=65", "count=abc&count=2"]) {
      const reply = await send(`${gateway.url}/openai/${ORG}/v1/nonces?${query}`, {
        method: "GET",
        headers: { authorization: `Bearer ${SERVICE_KEY}` }
      })
      expect(reply.status, query).toBe(400)
      expect(decodeOpenAi(reply.json()).error.code, query).toBe("invalid_count")
    }
    const repeated = await send(`${gateway.url}/openai/${ORG}/v1/nonces?count=2&count=5`, {
      method: "GET",
      headers: { authorization: `Bearer ${SERVICE_KEY}` }
    })
    expect(repeated.status).toBe(200)
    expect(repeated.json().nonces).toHaveLength(2)
  })

  it("messages routes answer in the Anthropic envelope", async () => {
    const unauthorized = await send(`${gateway.url}/anthropic/${ORG}/v1/messages`, {
      headers: { "x-api-key": "nope", "content-type": "application/json" },
      body: "{}"
    })
    expect(unauthorized.status).toBe(401)
    expect(decodeAnthropic(unauthorized.json()).error).toMatchObject({
      type: "authentication_error",
      code: "invalid_api_key"
    })

    const noModel = await send(`${gateway.url}/anthropic/${ORG}/v1/messages/count_tokens`, {
      headers: { ...auth, "anthropic-version": "2023-06-01" },
      body: "{}"
    })
    expect(noModel.status).toBe(400)
    expect(decodeAnthropic(noModel.json()).error.code).toBe("model_required")
  })

  it("refusals carry blocked_by and violations through the same schemas", () => {
    const view = describeFailure(
      new PolicyRefusal({
        refusal: "request_blocked",
        detail: "blocked by guardrail",
        blockedBy: "no-secrets",
        violations: [{
          policy_uuid: "u",
          policy_name: "no-secrets",
          rule_type: "blocked_pattern",
          action: "block",
          detail: "d"
        }]
      })
    )
    const openAi = decodeOpenAi(JSON.parse(encodeOpenAi(view)))
    expect(openAi.error).toMatchObject({ type: "policy_violation", code: "request_blocked", blocked_by: "no-secrets" })
    expect(openAi.error.violations).toHaveLength(1)
    const anthropic = decodeAnthropic(JSON.parse(encodeAnthropic(view)))
    expect(anthropic).toMatchObject({ type: "error", error: { type: "permission_error", blocked_by: "no-secrets" } })
  })
})

describe("the typed client derived from GatewayApi", () => {
  // Built per test: the gateway's port is known only once it listens.
  const client = Effect.suspend(() =>
    HttpApiClient.make(GatewayApi, {
      baseUrl: gateway.url,
      transformClient: HttpClient.mapRequest(HttpClientRequest.setHeader("authorization", `Bearer ${SERVICE_KEY}`))
    })
  )
  const run = <A, E>(effect: Effect.Effect<A, E, HttpClient.HttpClient>) =>
    Effect.runPromise(effect.pipe(Effect.provide(FetchHttpClient.layer)))

  it("lists models and issues nonces", async () => {
    const models = await run(
      Effect.flatMap(client, (c) => c.listings.models({ params: { provider: "openai", org: ORG } }))
    )
    expect("object" in models && models.object).toBe("list")
    const issued = await run(
      Effect.flatMap(
        client,
        (c) => c.listings.nonces({ params: { provider: "openai", org: ORG }, query: { count: "3" } })
      )
    )
    expect(issued.nonces).toHaveLength(3)
  })

  it("relays a chat completion", async () => {
    const completion = await run(
      Effect.flatMap(client, (c) =>
        c.openai.chat({
          params: { provider: "openai", org: ORG },
          payload: { model: "gpt-4.1", messages: [{ role: "user", content: "hi" }] }
        }))
    )
    expect(completion.object).toBe("chat.completion")
    expect(JSON.parse(gateway.upstream.received[0]!.body.toString("utf8")).model).toBe("gpt-4.1")
  })

  it("decodes a gateway error into the envelope", async () => {
    const failure = await run(
      Effect.flip(
        Effect.flatMap(
          client,
          (c) => c.listings.nonces({ params: { provider: "openai", org: ORG }, query: { count: "0" } })
        )
      )
    )
    expect(failure).toMatchObject({ error: { code: "invalid_count" } })
  })
})
