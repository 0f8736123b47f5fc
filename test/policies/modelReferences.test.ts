import { describe, expect, it } from "vitest"
import { PolicyRefusal } from "../../schema/PolicyRefusal.ts"
import { modelReferencesOf } from "../../src/policies/ModelReferences.ts"
import { modelsRefusal } from "../../src/policies/PolicyEvaluation.ts"
import { compileSnapshot } from "../../src/policies/PolicySnapshot.ts"

const policyOf = (...entries: Array<{ effect: "allow" | "deny"; value: string }>) =>
  compileSnapshot(1, entries.map((e) => ({ kind: "model" as const, provider: "openrouter", ...e }))).forProvider(
    "openrouter"
  )

const codeOf = (result: unknown) => result instanceof PolicyRefusal ? result.refusal : "pass"

describe("modelReferencesOf", () => {
  it("reads every field that names a model, with where it is", () => {
    const reading = modelReferencesOf("chat", {
      model: "a/main",
      models: ["a/fallback"],
      fallbacks: ["a/f1", { model: "a/f2" }],
      tools: [{ type: "function", function: { name: "x" } }, { type: "image_generation", model: "img" }, {
        type: "openrouter:advisor",
        parameters: { model: "a/advisor" }
      }],
      plugins: [{ id: "auto-router", allowed_models: ["anthropic/*", "a/exact"] }],
      advisor: { model: "a/consulted" }
    }, "a/main")
    expect(reading).toEqual({
      _tag: "Read",
      refs: [
        { name: "a/main", at: "", pattern: false },
        { name: "a/fallback", at: "models[0]", pattern: false },
        { name: "a/f1", at: "fallbacks[0]", pattern: false },
        { name: "a/f2", at: "fallbacks[1].model", pattern: false },
        { name: "img", at: "tools[1].model", pattern: false },
        { name: "a/advisor", at: "tools[2].parameters.model", pattern: false },
        { name: "anthropic/*", at: "plugins[0].allowed_models[0]", pattern: true },
        { name: "a/exact", at: "plugins[0].allowed_models[1]", pattern: false },
        { name: "a/consulted", at: "advisor.model", pattern: false }
      ],
      routerConstrained: true
    })
  })

  it("a function tool's JSON schema is not a server tool's parameters", () => {
    const reading = modelReferencesOf("responses", {
      tools: [{
        type: "function",
        name: "f",
        parameters: { type: "object", model: 5, properties: { model: { type: "string" } } }
      }]
    }, "m")
    expect(reading).toEqual({ _tag: "Read", refs: [{ name: "m", at: "", pattern: false }], routerConstrained: false })
  })

  it.each([
    [{ models: "x" }, "models"],
    [{ models: ["ok", 1] }, "models[1]"],
    [{ models: [""] }, "models[0]"],
    [{ fallbacks: {} }, "fallbacks"],
    [{ fallbacks: 3 }, "fallbacks"],
    [{ fallbacks: [{ name: "x" }] }, "fallbacks[0]"],
    [{ tools: [{ type: "image_generation", model: {} }] }, "tools[0].model"],
    [{ plugins: [{ id: "auto-router", allowed_models: [null] }] }, "plugins[0].allowed_models[0]"]
  ])("%j is malformed at %s", (body, at) => {
    expect(modelReferencesOf("chat", body, "m")).toMatchObject({ _tag: "Malformed", at })
  })

  it("kiro: the history's modelIds; a current modelId that isn't a string is malformed", () => {
    const body = (current: unknown) => ({
      conversationState: {
        currentMessage: { userInputMessage: { modelId: current } },
        history: [{ userInputMessage: { modelId: "old" } }, { assistantResponseMessage: {} }, { userInputMessage: {} }]
      }
    })
    expect(modelReferencesOf("kiro", body("now"), "now")).toEqual({
      _tag: "Read",
      refs: [{ name: "now", at: "", pattern: false }, {
        name: "old",
        at: "conversationState.history[0].userInputMessage.modelId",
        pattern: false
      }],
      routerConstrained: false
    })
    expect(modelReferencesOf("kiro", body(7), "")).toMatchObject({ _tag: "Malformed" })
  })
})

describe("modelsRefusal", () => {
  it("deny: a variant of a denied model, and a pattern covering one, are denied", () => {
    const policy = policyOf({ effect: "deny", value: "openai/gpt-4o" })
    const judge = (body: Record<string, unknown>, model = "x/ok") =>
      codeOf(modelsRefusal(policy, "openrouter", "chat", body, model))
    expect(judge({}, "openai/gpt-4o:nitro")).toBe("model_denied")
    expect(judge({}, "openai/gpt-4o-mini")).toBe("pass")
    expect(judge({ models: ["openai/gpt-4o:free"] })).toBe("model_denied")
    expect(judge({ plugins: [{ allowed_models: ["*"] }] })).toBe("model_denied")
    expect(judge({ plugins: [{ allowed_models: ["openai/gpt-4o:*"] }] })).toBe("model_denied")
    expect(judge({ plugins: [{ allowed_models: ["openai/gpt-4o:n*"] }] })).toBe("model_denied")
    expect(judge({ plugins: [{ allowed_models: ["anthropic/*", "openai/gpt-4o-*"] }] })).toBe("pass")
    expect(judge({ models: 3 })).toBe("request_uninspectable")
  })

  it("allowlist: a listed model's variants pass; a pattern passes only when listed itself", () => {
    const policy = policyOf({ effect: "allow", value: "openai/gpt-4o" }, { effect: "allow", value: "anthropic/*" })
    const judge = (body: Record<string, unknown>, model = "openai/gpt-4o") =>
      codeOf(modelsRefusal(policy, "openrouter", "chat", body, model))
    expect(judge({}, "openai/gpt-4o:nitro")).toBe("pass")
    expect(judge({ models: ["openai/gpt-4o-mini"] })).toBe("model_not_allowed")
    expect(judge({ plugins: [{ allowed_models: ["anthropic/*"] }] })).toBe("pass")
    expect(judge({ plugins: [{ allowed_models: ["openai/*"] }] })).toBe("model_not_allowed")
  })

  it("the auto router must be told which models it may pick, in an enabled auto-router plugin", () => {
    const judge = (policy: ReturnType<typeof policyOf>, body: Record<string, unknown>, model = "openrouter/auto") =>
      codeOf(modelsRefusal(policy, "openrouter", "chat", body, model))
    const deny = policyOf({ effect: "deny", value: "openai/gpt-4o" })
    expect(judge(deny, {})).toBe("model_denied")
    expect(judge(deny, {}, "openrouter/auto:nitro")).toBe("model_denied")
    expect(judge(deny, { models: ["openrouter/auto"] }, "x/ok")).toBe("model_denied")
    expect(judge(deny, { plugins: [{ id: "auto-router", enabled: false, allowed_models: ["anthropic/*"] }] })).toBe(
      "model_denied"
    )
    expect(judge(deny, { plugins: [{ id: "auto-router", allowed_models: [] }] })).toBe("model_denied")
    expect(judge(deny, { plugins: [{ id: "auto-router", allowed_models: ["anthropic/*"] }] })).toBe("pass")
    const allowlist = policyOf({ effect: "allow", value: "openrouter/auto" }, { effect: "allow", value: "anthropic/*" })
    expect(judge(allowlist, {})).toBe("model_not_allowed")
    expect(judge(allowlist, { plugins: [{ id: "auto-router", allowed_models: ["anthropic/*"] }] })).toBe("pass")
  })

  it("Anthropic's fallbacks mode: \"off\" passes, \"default\" (the provider picks) is refused", () => {
    const deny = policyOf({ effect: "deny", value: "claude-opus-4-6" })
    const judge = (fallbacks: unknown) =>
      codeOf(modelsRefusal(deny, "anthropic", "messages", { fallbacks }, "claude-ok"))
    expect(judge("off")).toBe("pass")
    expect(judge("default")).toBe("model_denied")
    expect(judge([{ model: "claude-sonnet-4-5", max_tokens: 100 }])).toBe("pass")
    expect(judge([{ model: "claude-opus-4-6", max_tokens: 100 }])).toBe("model_denied")
    const allowlist = policyOf({ effect: "allow", value: "claude-ok" })
    expect(codeOf(modelsRefusal(allowlist, "anthropic", "messages", { fallbacks: "default" }, "claude-ok"))).toBe(
      "model_not_allowed"
    )
  })

  it("no model entries: nothing is read, not even a malformed list", () => {
    expect(codeOf(modelsRefusal(policyOf(), "openrouter", "chat", { models: 3 }, "x"))).toBe("pass")
  })
})
