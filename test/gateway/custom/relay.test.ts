import { Effect, Layer } from "effect"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PolicyRefusal } from "../../../schema/PolicyRefusal.ts"
import { Inspection } from "../../../src/gateway/pipeline/Inspection.ts"
import { allowVerdict } from "../../../src/gateway/pipeline/Verdict.ts"
import { VettingPolicy } from "../../../src/providers/custom/VettingPolicy.ts"
import {
  type Canary,
  chat,
  CUSTOM_KEY,
  type CustomGateway,
  type HttpsUpstream,
  KEY,
  ORG,
  OTHER_KEY,
  OTHER_ORG,
  startCanary,
  startCustomGateway,
  startHttpsUpstream,
  tableResolver,
  testCertificate
} from "./harness.ts"

/**
 * A firewall keyed by provider slug, as policies are: `denied-llm` is denied,
 * `redacting-llm` has its "secret" redacted; everything else passes.
 */
const slugFirewall = Layer.succeed(Inspection)(Inspection.of({
  inspect: (request) => {
    if (request.provider.slug === "denied-llm") {
      return Effect.fail(new PolicyRefusal({ refusal: "provider_denied", detail: "provider denied-llm is denied" }))
    }
    if (request.provider.slug !== "redacting-llm") return Effect.succeed(allowVerdict)
    const body = new TextEncoder().encode(new TextDecoder().decode(request.body).replace("secret", "[REDACTED]"))
    return Effect.succeed({ ...allowVerdict, decision: "redact" as const, redactions: 1, body })
  },
  admitProvider: () => Effect.void,
  visibleModels: (_org, provider) => Effect.succeed(provider.spec.models)
}))

/**
 * The request path of a custom provider over real https on loopback, under
 * the test allowance: only 127.0.0.1 (the provider) is let through, so the
 * canary on 127.0.0.2 is as reserved as it is in production.
 */
describe("custom providers: relay over https to the vetted address", () => {
  const tls = testCertificate(["llm.test", "rebind.test", "mixed.test"])
  let upstream: HttpsUpstream
  let canary: Canary
  let gateway: CustomGateway
  let rebindLookups = 0

  beforeAll(async () => {
    upstream = await startHttpsUpstream(tls)
    // Same port, another loopback address: what a changed DNS answer would reach.
    canary = await startCanary("127.0.0.2", upstream.port)
    const resolver = tableResolver({
      "llm.test": ["127.0.0.1"],
      // The first two answers allowed, every later one the canary: the rebinding attempt.
      "rebind.test": (n) => {
        rebindLookups = n + 1
        return n <= 1 ? ["127.0.0.1"] : ["127.0.0.2"]
      },
      "mixed.test": ["127.0.0.1", "127.0.0.2"]
    })
    gateway = await startCustomGateway({
      resolver,
      policy: VettingPolicy.allowForTests({ addresses: ["127.0.0.1"], ca: tls.cert }),
      inspection: slugFirewall
    })
    const add = (slug: string, host: string, extra: object = {}) =>
      Effect.runPromise(gateway.providers.add(ORG, {
        slug,
        base_url: `https://${host}:${upstream.port}/v1`,
        surfaces: ["chat"],
        ...extra
      }))
    await add("acme-llm", "llm.test", { default_headers: { "x-version": "2024-01-01" } })
    await add("redirecting", "llm.test")
  })
  afterAll(async () => {
    await gateway?.close()
    await upstream?.close()
    await canary?.close()
  })

  it("the official openai client gets the provider's answer; the provider sees SNI and Host of the name, and the vault key", async () => {
    upstream.seen.length = 0
    const client = new OpenAI({ apiKey: KEY, baseURL: `${gateway.url}/acme-llm/${ORG}/v1`, maxRetries: 0 })
    const completion = await client.chat.completions.create({
      model: "my-model",
      messages: [{ role: "user", content: "hi" }]
    })
    expect(completion.choices[0]?.message.content).toBe("Hello from the fake upstream.")
    expect(completion.model).toBe("my-model")

    const stream = await client.chat.completions.create({
      model: "my-model",
      messages: [{ role: "user", content: "hi" }],
      stream: true
    })
    let text = ""
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    expect(text).toBe("Hello wörld ✓")

    expect(upstream.seen).toHaveLength(2)
    for (const seen of upstream.seen) {
      expect(seen.url).toBe("/v1/chat/completions")
      expect(seen.servername).toBe("llm.test")
      expect(seen.headers.host).toBe(`llm.test:${upstream.port}`)
      expect(seen.headers.authorization).toBe(`Bearer ${CUSTOM_KEY}`)
      expect(seen.headers["x-version"]).toBe("2024-01-01")
      expect(JSON.stringify(seen.headers)).not.toContain(KEY)
    }
  })

  it("a 302 to an internal address is 502 upstream_redirect, and the redirect target gets nothing", async () => {
    upstream.redirectTo = `https://127.0.0.2:${upstream.port}/v1/chat/completions`
    try {
      for (const stream of [false, true]) {
        const response = await chat(gateway, "redirecting", ORG, KEY, { model: "m", messages: [], stream })
        expect(response.status).toBe(502)
        const body = await response.json() as { error: { code: string; message: string } }
        expect(body.error.code).toBe("upstream_redirect")
        expect(body.error.message).not.toContain("127.0.0.2")
      }
    } finally {
      upstream.redirectTo = undefined
    }
    expect(canary.connections()).toBe(0)
  })

  it("resolves once per request and connects to the vetted address: a changed answer never reaches its target", async () => {
    // Lookup 0 (registration) and 1 (the first request) answer 127.0.0.1; every later lookup the canary.
    await Effect.runPromise(gateway.providers.add(ORG, {
      slug: "rebinding",
      base_url: `https://rebind.test:${upstream.port}/v1`,
      surfaces: ["chat"]
    }))
    upstream.seen.length = 0
    const first = await chat(gateway, "rebinding")
    expect(first.status).toBe(200)
    expect(upstream.seen).toHaveLength(1)
    expect(upstream.seen[0]!.servername).toBe("rebind.test")
    // One lookup for the check; the connection did not ask again (a second lookup would have named the canary).
    expect(rebindLookups).toBe(2)
    expect(canary.connections()).toBe(0)

    const second = await chat(gateway, "rebinding")
    expect(second.status).toBe(502)
    expect(((await second.json()) as { error: { code: string } }).error.code).toBe("upstream_blocked")
    expect(rebindLookups).toBe(3)
    expect(upstream.seen).toHaveLength(1)
    expect(canary.connections()).toBe(0)
  })

  it("a name with any reserved address among its answers is refused, though another is allowed", async () => {
    upstream.seen.length = 0
    const refused = await Effect.runPromise(Effect.flip(gateway.providers.add(ORG, {
      slug: "mixed",
      base_url: `https://mixed.test:${upstream.port}/v1`,
      surfaces: ["chat"]
    })))
    expect(refused.message).toMatch(/only to public addresses/)
    expect(upstream.seen).toHaveLength(0)
    expect(canary.connections()).toBe(0)
  })

  it("another organization gets the unknown slug's 404, byte for byte", async () => {
    const foreign = await chat(gateway, "acme-llm", OTHER_ORG, OTHER_KEY)
    const unknown = await chat(gateway, "no-such-llm", OTHER_ORG, OTHER_KEY)
    expect(foreign.status).toBe(404)
    const foreignBody = await foreign.text()
    expect(foreignBody.replace("acme-llm", "SLUG")).toBe((await unknown.text()).replace("no-such-llm", "SLUG"))
    // Naming the owner in the path without the owner's key proves nothing either: the same 404, not a 401.
    for (const key of [OTHER_KEY, "", "vdb_sk_wrong"]) {
      const probe = await chat(gateway, "acme-llm", ORG, key)
      expect(probe.status).toBe(404)
      expect(await probe.text()).toBe(foreignBody)
      const listing = await fetch(`${gateway.url}/acme-llm/${ORG}/v1/models`, {
        headers: { authorization: `Bearer ${key}` }
      })
      expect(listing.status).toBe(404)
      expect(await listing.text()).toBe(foreignBody)
    }
    // And the very slug, once nobody has it, answers the same bytes.
    await Effect.runPromise(gateway.providers.add(ORG, {
      slug: "short-lived",
      base_url: `https://llm.test:${upstream.port}/v1`,
      surfaces: ["chat"]
    }))
    const whileOwned = await (await chat(gateway, "short-lived", OTHER_ORG, OTHER_KEY)).text()
    expect((await chat(gateway, "short-lived", ORG, KEY)).status).toBe(200)
    await Effect.runPromise(gateway.providers.remove(ORG, "short-lived"))
    const afterRemoval = await chat(gateway, "short-lived", OTHER_ORG, OTHER_KEY)
    expect(afterRemoval.status).toBe(404)
    expect(await afterRemoval.text()).toBe(whileOwned)
    // Removal reaches the owner's next request at once (the cache is evicted, not waited out).
    expect((await chat(gateway, "short-lived", ORG, KEY)).status).toBe(404)
  })

  it("asked for the Kiro API, a custom provider answers 400 unsupported_api; other surfaces 404 as for built-ins", async () => {
    const kiro = await fetch(`${gateway.url}/acme-llm/${ORG}/v1/generateAssistantResponse`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: "{}"
    })
    expect(kiro.status).toBe(400)
    expect(((await kiro.json()) as { error: { code: string } }).error.code).toBe("unsupported_api")
    const responses = await fetch(`${gateway.url}/acme-llm/${ORG}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ model: "m", input: "hi" })
    })
    expect(responses.status).toBe(404)
    expect(((await responses.json()) as { error: { code: string } }).error.code).toBe("unsupported_api")
  })

  it("serves the legacy header form, and a messages provider at base URL + /messages", async () => {
    upstream.seen.length = 0
    const legacy = await fetch(`${gateway.url}/acme-llm/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${KEY}`, "x-organisation-uuid": ORG },
      body: JSON.stringify({ model: "m", messages: [] })
    })
    expect(legacy.status).toBe(200)
    await Effect.runPromise(gateway.providers.add(ORG, {
      slug: "acme-messages",
      base_url: `https://llm.test:${upstream.port}/anthropic/v1`,
      surfaces: ["messages"],
      auth: "x-api-key"
    }))
    const messages = await fetch(`${gateway.url}/acme-messages/${ORG}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": KEY },
      body: JSON.stringify({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "hi" }] })
    })
    expect(messages.status).toBe(200)
    expect(upstream.seen.map((s) => s.url)).toEqual(["/v1/chat/completions", "/anthropic/v1/messages"])
    expect(upstream.seen[1]!.headers["x-api-key"]).toBe(CUSTOM_KEY)
    expect(upstream.seen[1]!.headers.authorization).toBeUndefined()
  })

  it("goes through the firewall like a built-in: a denied slug sends nothing, a redaction reaches the provider", async () => {
    upstream.seen.length = 0
    for (const slug of ["denied-llm", "redacting-llm"]) {
      await Effect.runPromise(
        gateway.providers.add(ORG, { slug, base_url: `https://llm.test:${upstream.port}/v1`, surfaces: ["chat"] })
      )
    }
    const body = { model: "m", messages: [{ role: "user", content: "my secret plan" }] }
    const denied = await chat(gateway, "denied-llm", ORG, KEY, body)
    expect(denied.status).toBe(403)
    expect(((await denied.json()) as { error: { code: string } }).error.code).toBe("provider_denied")
    expect(upstream.seen).toHaveLength(0)
    const redacted = await chat(gateway, "redacting-llm", ORG, KEY, body)
    expect(redacted.status).toBe(200)
    expect(upstream.seen).toHaveLength(1)
    expect(upstream.seen[0]!.body).toContain("my [REDACTED] plan")
    expect(upstream.seen[0]!.body).not.toContain("secret")
  })

  it("lists no models for a custom provider (listing never calls a provider)", async () => {
    upstream.seen.length = 0
    const response = await fetch(`${gateway.url}/acme-llm/${ORG}/v1/models`, {
      headers: { authorization: `Bearer ${KEY}` }
    })
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ object: "list", data: [] })
    expect(upstream.seen).toHaveLength(0)
  })
})
