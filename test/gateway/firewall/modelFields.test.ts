import OpenAI from "openai"
import { beforeEach, describe, expect, it } from "vitest"
import { ORG, SERVICE_KEY } from "./harness.ts"
import { policyGateway } from "./policyClient.ts"

/**
 * Issue 32 §4: the model policy judges every field of a provider's API that
 * names a model, through the real gateway; a stub provider records what
 * reached it.
 */

const { add, current, post } = policyGateway()
const hi = [{ role: "user", content: "hi" }]
const openrouter = (body: Record<string, unknown>) =>
  post(`/openrouter/${ORG}/v1/chat/completions`, { model: "openai/gpt-4o-mini", messages: hi, ...body })
const responses = (body: Record<string, unknown>) =>
  post(`/openai/${ORG}/v1/responses`, { model: "gpt-4.1", input: "hi", ...body })
const messages = (body: Record<string, unknown>) =>
  post(`/anthropic/${ORG}/v1/messages`, { model: "claude-ok", max_tokens: 8, messages: hi, ...body })

/** A 403 with the code, nothing upstream; the message, in the route's dialect. */
const refused = async (response: Response, code: string, dialect: "openai" | "anthropic" = "openai") => {
  const body = await response.json() as any
  expect(response.status, JSON.stringify(body)).toBe(403)
  if (dialect === "anthropic") expect(body.type).toBe("error")
  expect(body.error.code).toBe(code)
  expect(response.headers.get("x-gateway-firewall-decision")).toBe("block")
  expect(current().upstream.received).toHaveLength(0)
  return body.error.message as string
}

const passes = async (response: Response) => {
  expect(response.status, await response.clone().text()).toBe(200)
  expect(current().upstream.received).toHaveLength(1)
  current().upstream.reset()
}

describe("OpenRouter routing fields (chat)", () => {
  beforeEach(() => add({ kind: "model", effect: "deny", provider: "openrouter", value: "openai/gpt-4o" }))

  it("a denied model in the `models` fallback list is model_denied (the issue's repro; passed before)", async () => {
    const message = await refused(await openrouter({ models: ["openai/gpt-4o"] }), "model_denied")
    expect(message).toBe("model openai/gpt-4o (named in models[0]) is denied for provider openrouter")
    // Through the official client too, as `extra_body` would send it.
    const client = new OpenAI({ apiKey: SERVICE_KEY, baseURL: `${current().url}/openrouter/${ORG}/v1`, maxRetries: 0 })
    const error = await client.chat.completions.create({
      model: "openai/gpt-4o-mini",
      messages: [{ role: "user", content: "hi" }],
      // @ts-expect-error OpenRouter's own parameter
      models: ["anthropic/claude-3.5-haiku", "openai/gpt-4o"]
    }).catch((e) => e)
    expect(error).toBeInstanceOf(OpenAI.PermissionDeniedError)
    expect(error.code).toBe("model_denied")
    await passes(await openrouter({ models: ["anthropic/claude-3.5-haiku"], route: "fallback" }))
  })

  it("a variant of a denied model (`:nitro`, `:free`, `:online`) is denied, in `model` and in `models`", async () => {
    for (const variant of ["openai/gpt-4o:nitro", "openai/gpt-4o:free", "openai/gpt-4o:online"]) {
      await refused(await openrouter({ model: variant }), "model_denied")
      await refused(await openrouter({ models: [variant] }), "model_denied")
    }
    await passes(await openrouter({ model: "openai/gpt-4o-mini:nitro" }))
  })

  it("an auto-router pattern that covers a denied model is denied; one that doesn't passes", async () => {
    const router = (allowed: Array<string>) => ({
      model: "openrouter/auto",
      plugins: [{ id: "auto-router", allowed_models: allowed }]
    })
    await refused(await openrouter(router(["anthropic/*", "openai/*"])), "model_denied")
    await refused(await openrouter(router(["openai/gpt-4o:*"])), "model_denied")
    await refused(await openrouter(router(["openai/gpt-4o"])), "model_denied")
    await passes(await openrouter(router(["anthropic/*", "openai/gpt-4o-mini"])))
    // Untold, the auto router picks among every model, the denied one too.
    const message = await refused(await openrouter({ model: "openrouter/auto" }), "model_denied")
    expect(message).toMatch(/picks a model itself/)
  })

  it("a server tool's model (openrouter:advisor parameters.model, a tool's model) is judged", async () => {
    await refused(
      await openrouter({ tools: [{ type: "openrouter:advisor", parameters: { model: "openai/gpt-4o" } }] }),
      "model_denied"
    )
    await refused(
      await openrouter({ tools: [{ type: "openrouter:image_generation", model: "openai/gpt-4o" }] }),
      "model_denied"
    )
    await passes(
      await openrouter({ tools: [{ type: "openrouter:advisor", parameters: { model: "anthropic/claude-opus-4.5" } }] })
    )
  })

  it("a malformed model-naming field is refused (request_uninspectable), never forwarded", async () => {
    for (
      const body of [
        { models: "openai/gpt-4o" },
        { models: ["anthropic/claude-3.5-haiku", 7] },
        { models: [["openai/gpt-4o"]] },
        { models: [{ model: "openai/gpt-4o" }] },
        { fallbacks: [{ name: "openai/gpt-4o" }] },
        { plugins: [{ id: "auto-router", allowed_models: "openai/*" }] },
        { tools: [{ type: "image_generation", model: ["openai/gpt-4o"] }] }
      ]
    ) {
      const message = await refused(await openrouter(body), "request_uninspectable")
      expect(message).toMatch(/must be/)
    }
    // `null` reads as absent, as the providers read it.
    await passes(await openrouter({ models: null }))
  })

  it("an allowlist admits only listed models in every field, and variants of a listed model", async () => {
    await add({ kind: "model", effect: "allow", provider: "openrouter", value: "openai/gpt-4o-mini" })
    await refused(await openrouter({ models: ["anthropic/claude-3.5-haiku"] }), "model_not_allowed")
    await refused(
      await openrouter({ plugins: [{ id: "auto-router", allowed_models: ["anthropic/*"] }] }),
      "model_not_allowed"
    )
    await passes(await openrouter({ model: "openai/gpt-4o-mini:nitro", models: ["openai/gpt-4o-mini"] }))
  })
})

describe("OpenAI Responses and Anthropic Messages", () => {
  it("responses: the image_generation tool's model and a `models` list are judged", async () => {
    await add({ kind: "model", effect: "deny", provider: "openai", value: "gpt-image-1" })
    const message = await refused(
      await responses({ tools: [{ type: "image_generation", model: "gpt-image-1" }] }),
      "model_denied"
    )
    expect(message).toBe("model gpt-image-1 (named in tools[0].model) is denied for provider openai")
    await refused(await responses({ models: ["gpt-image-1"] }), "model_denied")
    await passes(await responses({ tools: [{ type: "image_generation", model: "gpt-image-1-mini" }] }))
  })

  it("messages: the advisor tool's model and `fallbacks` are judged, in the Anthropic dialect", async () => {
    await add({ kind: "model", effect: "deny", provider: "anthropic", value: "claude-opus-4-6" })
    await refused(
      await messages({ tools: [{ type: "advisor_20260301", name: "advisor", model: "claude-opus-4-6" }] }),
      "model_denied",
      "anthropic"
    )
    await refused(await messages({ fallbacks: [{ model: "claude-opus-4-6" }] }), "model_denied", "anthropic")
    await refused(await messages({ fallbacks: ["claude-opus-4-6"] }), "model_denied", "anthropic")
    await refused(await messages({ fallbacks: [{ model: 4 }] }), "request_uninspectable", "anthropic")
    // Anthropic's server-side fallback picks the model itself with "default".
    await refused(await messages({ fallbacks: "default" }), "model_denied", "anthropic")
    await passes(await messages({ fallbacks: "off" }))
    const counted = await post(`/anthropic/${ORG}/v1/messages/count_tokens`, {
      model: "claude-ok",
      messages: hi,
      tools: [{ type: "advisor_20260301", name: "advisor", model: "claude-opus-4-6" }]
    })
    await refused(counted, "model_denied", "anthropic")
    await passes(await messages({ fallbacks: [{ model: "claude-sonnet-4-5" }] }))
  })

  it("a key named twice goes upstream as the policy read it", async () => {
    await add({ kind: "model", effect: "deny", provider: "openrouter", value: "openai/gpt-4o" })
    const response = await post(
      `/openrouter/${ORG}/v1/chat/completions`,
      `{"model":"openai/gpt-4o-mini","messages":[],"models":["openai/gpt-4o"],"models":["x/y"]}`
    )
    expect(response.status).toBe(200)
    expect(JSON.parse(current().upstream.received[0]!.body.toString()).models).toEqual(["x/y"])
    expect(current().upstream.received[0]!.body.toString()).not.toContain("openai/gpt-4o\"")
  })
})
