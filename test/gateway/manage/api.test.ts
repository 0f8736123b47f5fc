import { Effect, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { formatApiKey } from "../../../src/auth/ApiKey.ts"
import { declaredBody } from "../../device/http.ts"
import { SqlBackends } from "../../support/database.ts"
import { type ManagedGateway, newOrg, startManagedGateway, withClient } from "./harness.ts"

const failure = <A, E>(effect: Effect.Effect<A, E>) => Effect.flip(effect)

describe.each(SqlBackends)("management API on $name", ({ layer }) => {
  let gateway: ManagedGateway
  let acme: { uuid: string; secret: string }
  let other: { uuid: string; secret: string }

  beforeAll(async () => {
    gateway = await startManagedGateway(layer)
    acme = await newOrg(gateway, "acme")
    other = await newOrg(gateway, "other")
  }, 60_000)
  afterAll(() => gateway?.close())

  const raw = (path: string, init?: RequestInit & { org?: { uuid: string; secret: string } }) =>
    fetch(`${gateway.url}${path}`, {
      ...init,
      headers: {
        "content-type": "application/json",
        ...(init?.org ? { authorization: formatApiKey(init.org.uuid, init.org.secret) } : {}),
        ...(init?.headers as Record<string, string> | undefined)
      }
    })

  it("creates, lists, shows, updates, disables, enables and deletes guardrail rules", async () => {
    const rule = await withClient(
      gateway,
      acme,
      (client) =>
        client.guardrails.create({
          payload: { name: "no secrets", rule_type: "blocked_pattern", pattern: "secret-[0-9]+" }
        })
    )
    expect(rule).toMatchObject({
      name: "no secrets",
      action: "block",
      enabled: true,
      compiles: true,
      org_uuid: acme.uuid
    })

    const listed = await withClient(gateway, acme, (client) => client.guardrails.list())
    expect(listed.data.map((r) => r.uuid)).toEqual([rule.uuid])

    const updated = await withClient(
      gateway,
      acme,
      (client) => client.guardrails.update({ params: { uuid: rule.uuid }, payload: { priority: 5, action: "flag" } })
    )
    expect(updated).toMatchObject({ priority: 5, action: "flag" })

    const disabled = await withClient(
      gateway,
      acme,
      (client) => client.guardrails.disable({ params: { uuid: rule.uuid } })
    )
    expect(disabled.enabled).toBe(false)
    const enabled = await withClient(
      gateway,
      acme,
      (client) => client.guardrails.enable({ params: { uuid: rule.uuid } })
    )
    expect(enabled.enabled).toBe(true)
    const shown = await withClient(gateway, acme, (client) => client.guardrails.show({ params: { uuid: rule.uuid } }))
    expect(shown).toMatchObject({ uuid: rule.uuid, priority: 5, action: "flag", enabled: true })

    await withClient(gateway, acme, (client) => client.guardrails.remove({ params: { uuid: rule.uuid } }))
    const gone = await withClient(
      gateway,
      acme,
      (client) => failure(client.guardrails.show({ params: { uuid: rule.uuid } }))
    )
    expect(gone).toMatchObject({ _tag: "ManageNotFound", code: "rule_not_found" })
  })

  it("refuses a pattern RE2 does not compile with 400 and the compiler's message", async () => {
    const response = await raw("/manage/v1/guardrails", {
      method: "POST",
      org: acme,
      body: JSON.stringify({ name: "lookahead", rule_type: "blocked_pattern", pattern: "a(?=b)" })
    })
    expect(response.status).toBe(400)
    const body = (await response.json()) as { error: { message: string; type: string; code: string } }
    expect(body.error.type).toBe("invalid_request_error")
    expect(body.error.code).toBe("invalid_rule")
    expect(body.error.message).toMatch(/invalid perl operator|lookahead|\(\?=/i)

    const viaClient = await withClient(
      gateway,
      acme,
      (client) =>
        failure(
          client.guardrails.create({ payload: { name: "unclosed", rule_type: "blocked_pattern", pattern: "(abc" } })
        )
    )
    expect(viaClient).toMatchObject({ _tag: "ManageInvalidRequest", code: "invalid_rule" })
    expect(viaClient.message).toMatch(/missing \)|missing closing/i)
  })

  it("never shows or changes another organization's rules and entries", async () => {
    const mine = await withClient(
      gateway,
      acme,
      (client) =>
        client.guardrails.create({
          payload: { name: "acme only", rule_type: "pii_redact", pattern: "[0-9]{3}-[0-9]{4}" }
        })
    )
    const entry = await withClient(
      gateway,
      acme,
      (client) => client.policies.add({ payload: { kind: "tool", effect: "deny", value: "shell" } })
    )

    const theirs = await withClient(gateway, other, (client) => client.guardrails.list())
    expect(theirs.data).toEqual([])
    expect((await withClient(gateway, other, (client) => client.policies.list())).data).toEqual([])

    for (
      const attempt of [
        (client: Parameters<Parameters<typeof withClient>[2]>[0]) =>
          client.guardrails.show({ params: { uuid: mine.uuid } }),
        (client: Parameters<Parameters<typeof withClient>[2]>[0]) =>
          client.guardrails.disable({ params: { uuid: mine.uuid } }),
        (client: Parameters<Parameters<typeof withClient>[2]>[0]) =>
          client.guardrails.update({ params: { uuid: mine.uuid }, payload: { name: "taken over" } }),
        (client: Parameters<Parameters<typeof withClient>[2]>[0]) =>
          client.guardrails.remove({ params: { uuid: mine.uuid } }),
        (client: Parameters<Parameters<typeof withClient>[2]>[0]) =>
          client.policies.remove({ params: { uuid: entry.uuid } })
      ]
    ) {
      const refused = await withClient(
        gateway,
        other,
        (client) => failure(attempt(client) as Effect.Effect<unknown, { _tag: string }>)
      )
      expect(refused._tag).toBe("ManageNotFound")
    }
    const still = await withClient(gateway, acme, (client) => client.guardrails.show({ params: { uuid: mine.uuid } }))
    expect(still).toMatchObject({ name: "acme only", enabled: true })
    expect((await withClient(gateway, acme, (client) => client.policies.list())).data.map((e) => e.uuid)).toContain(
      entry.uuid
    )
  })

  it("adds allow, deny and strip entries and removes them", async () => {
    const org = await newOrg(gateway, "policy org")
    const added = await withClient(gateway, org, (client) =>
      Effect.all([
        client.policies.add({ payload: { kind: "provider", effect: "deny", value: "groq" } }),
        client.policies.add({ payload: { kind: "model", effect: "allow", provider: "openai", value: "gpt-4o-mini" } }),
        client.policies.add({ payload: { kind: "mcp", effect: "strip", value: "filesystem" } })
      ]))
    expect(added.map((e) => [e.kind, e.effect, e.provider, e.value])).toEqual([
      ["provider", "deny", null, "groq"],
      ["model", "allow", "openai", "gpt-4o-mini"],
      ["mcp", "strip", null, "filesystem"]
    ])
    const badStrip = await withClient(
      gateway,
      org,
      (client) =>
        failure(client.policies.add({ payload: { kind: "model", effect: "strip", provider: "openai", value: "x" } }))
    )
    expect(badStrip).toMatchObject({ _tag: "ManageInvalidRequest", code: "invalid_policy" })

    await withClient(gateway, org, (client) => client.policies.remove({ params: { uuid: added[0]!.uuid } }))
    const left = await withClient(gateway, org, (client) => client.policies.list())
    expect(left.data.map((e) => e.uuid).sort()).toEqual([added[1]!.uuid, added[2]!.uuid].sort())
  })

  it("dry-runs the guardrails over one text, with the provider policy when a provider is named", async () => {
    const org = await newOrg(gateway, "check org")
    await withClient(gateway, org, (client) =>
      Effect.all([
        client.guardrails.create({ payload: { name: "phone", rule_type: "pii_redact", pattern: "[0-9]{3}-[0-9]{4}" } }),
        client.guardrails.create({
          payload: { name: "launch codes", rule_type: "blocked_pattern", pattern: "launch code" }
        }),
        client.policies.add({ payload: { kind: "provider", effect: "deny", value: "groq" } })
      ]))
    const redacted = await withClient(
      gateway,
      org,
      (client) => client.guardrails.check({ payload: { text: "call 555-1234" } })
    )
    expect(redacted).toMatchObject({ decision: "redact", rules: ["phone"], redactions: 1 })
    const response = await raw("/manage/v1/guardrails/check", {
      method: "POST",
      org,
      body: JSON.stringify({ text: "the launch code is 555-1234" })
    })
    const text = await response.text()
    expect(JSON.parse(text)).toMatchObject({ decision: "block", blocked_by: "launch codes" })
    expect(text).not.toContain("555-1234")
    const denied = await withClient(
      gateway,
      org,
      (client) => client.guardrails.check({ payload: { text: "hello", provider: "groq" } })
    )
    expect(denied).toMatchObject({ decision: "block", refusal: { code: "provider_denied" } })
    const clean = await withClient(
      gateway,
      org,
      (client) => client.guardrails.check({ payload: { text: "hello", provider: "openai" } })
    )
    expect(clean).toMatchObject({ decision: "allow", rules: [] })
  })

  it("takes provider keys write-only and lists only the providers", async () => {
    const org = await newOrg(gateway, "keys org")
    await withClient(
      gateway,
      org,
      (client) =>
        client.providerKeys.set({
          params: { provider: "openai" },
          payload: { key: Redacted.make("sk-very-secret-value") }
        })
    )
    const listed = await raw("/manage/v1/provider-keys", { org })
    const text = await listed.text()
    expect(JSON.parse(text).data.map((e: { provider: string }) => e.provider)).toEqual(["openai"])
    expect(text).not.toContain("sk-very-secret-value")
    expect((await withClient(gateway, other, (client) => client.providerKeys.list())).data).toEqual([])
    const stored = await Effect.runPromise(gateway.providerKeys.get(org.uuid, "openai"))
    expect(stored.toString()).not.toContain("sk-very")
    const unknown = await raw("/manage/v1/provider-keys/nope", {
      method: "PUT",
      org,
      body: JSON.stringify({ key: "sk-x" })
    })
    expect(unknown.status).toBe(400)
    expect(await unknown.text()).not.toContain("sk-x")
    await withClient(gateway, org, (client) => client.providerKeys.remove({ params: { provider: "openai" } }))
    const again = await withClient(
      gateway,
      org,
      (client) => failure(client.providerKeys.remove({ params: { provider: "openai" } }))
    )
    expect(again).toMatchObject({ _tag: "ManageNotFound", code: "provider_key_not_found" })
  })

  it("switches the inference log", async () => {
    const org = await newOrg(gateway, "log org")
    expect(await withClient(gateway, org, (client) => client.inferenceLog.get())).toEqual({ enabled: false })
    expect(await withClient(gateway, org, (client) => client.inferenceLog.set({ payload: { enabled: true } }))).toEqual(
      { enabled: true }
    )
    expect(await withClient(gateway, org, (client) => client.inferenceLog.get())).toEqual({ enabled: true })
    expect(await withClient(gateway, other, (client) => client.inferenceLog.get())).toEqual({ enabled: false })
  })

  it("answers 401 in the dialect without or with a wrong credential", async () => {
    for (
      const headers of [{}, { authorization: "Bearer whatever" }, {
        authorization: formatApiKey(acme.uuid, "0".repeat(64))
      }]
    ) {
      const response = await raw("/manage/v1/guardrails", { headers })
      expect(response.status).toBe(401)
      expect(response.headers.get("www-authenticate")).toBe(`ApiKey realm="vdb"`)
      expect(((await response.json()) as { error: { type: string; code: string } }).error).toMatchObject({
        type: "authentication_error",
        code: "invalid_api_key"
      })
    }
  })

  it("takes the ApiKey scheme in any case (RFC 9110 §11.1)", async () => {
    const lower = formatApiKey(acme.uuid, acme.secret).replace(/^ApiKey/, "apikey")
    expect((await raw("/manage/v1/guardrails", { headers: { authorization: lower } })).status).toBe(200)
  })

  it("counts against the organization's limits (429 with Retry-After) and refuses an inactive organization (403)", async () => {
    const limited = await Effect.runPromise(gateway.orgs.create({ name: "limited", perMinute: 1, perWeek: 0 }))
    expect((await raw("/manage/v1/inference-log", { org: limited })).status).toBe(200)
    const refused = await raw("/manage/v1/inference-log", { org: limited })
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
    expect(((await refused.json()) as { error: { type: string; code: string } }).error).toMatchObject({
      type: "rate_limit_error",
      code: "rate_limit_exceeded"
    })
    await Effect.runPromise(gateway.orgs.setActive(limited.uuid, false))
    const inactive = await raw("/manage/v1/guardrails", { org: limited })
    expect(inactive.status).toBe(403)
    expect(((await inactive.json()) as { error: { code: string } }).error.code).toBe("organization_inactive")
  })

  it("renders request-validation failures in the dialect", async () => {
    const response = await raw("/manage/v1/guardrails", {
      method: "POST",
      org: acme,
      body: JSON.stringify({ name: "x", rule_type: "no_such_type", pattern: "TOPSECRETVALUE" })
    })
    expect(response.status).toBe(400)
    const text = await response.text()
    expect(JSON.parse(text).error).toMatchObject({ type: "invalid_request_error", code: "invalid_request" })
    expect(JSON.parse(text).error.message).toMatch(/^invalid request body/)
    const keyAsNumber = await raw("/manage/v1/provider-keys/openai", {
      method: "PUT",
      org: acme,
      body: JSON.stringify({ key: 987654321 })
    })
    expect(keyAsNumber.status).toBe(400)
    expect(await keyAsNumber.text()).not.toContain("987654321")
    const notJson = await raw("/manage/v1/policies", { method: "POST", org: acme, body: "{" })
    expect(notJson.status).toBe(400)
    expect(((await notJson.json()) as { error: { code: string } }).error.code).toBe("invalid_request")
  })

  it("refuses a body over 8 MiB (the inference routes' cap) with 413 in the dialect", async () => {
    const pattern = "A".repeat(9 * 1024 * 1024)
    const response = await raw("/manage/v1/guardrails", {
      method: "POST",
      org: acme,
      body: JSON.stringify({ name: "big", rule_type: "blocked_pattern", pattern })
    })
    expect(response.status).toBe(413)
    const text = await response.text()
    expect(JSON.parse(text).error).toMatchObject({ type: "invalid_request_error", code: "request_too_large" })
    expect(text).not.toContain("AAAA")
    // The same client gets a 413 from the typed client as its declared error.
    const error = await withClient(
      gateway,
      acme,
      (client) => failure(client.guardrails.create({ payload: { name: "big", rule_type: "blocked_pattern", pattern } }))
    )
    expect(error._tag).toBe("ManageRequestTooLarge")
    // A body declared over the cap is refused before any of it is read (one byte is sent, never the rest).
    const port = Number(new URL(gateway.url).port)
    const declared = await declaredBody(port, "/manage/v1/guardrails", "application/json", 100 * 1024 * 1024)
    expect(declared.status).toBe(413)
    expect(declared.json.error.code).toBe("request_too_large")
  })

  it("answers unknown management paths and methods in the dialect", async () => {
    const unknown = await raw("/manage/v1/nope", { org: acme })
    expect(unknown.status).toBe(404)
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe("not_found")
    const wrongMethod = await raw("/manage/v1/guardrails", { method: "PUT", org: acme, body: "{}" })
    expect(wrongMethod.status).toBe(405)
    expect(wrongMethod.headers.get("allow")).toBe("GET, HEAD, POST")
    expect(((await wrongMethod.json()) as { error: { code: string } }).error.code).toBe("method_not_allowed")
    // A segment longer than the router reads: 414, not a 405 naming the method asked.
    const long = await raw(`/manage/v1/guardrails/${"a".repeat(3000)}`, { org: acme })
    expect(long.status).toBe(414)
    expect(((await long.json()) as { error: { code: string } }).error.code).toBe("uri_too_long")
  })

  it("serves its OpenAPI document", async () => {
    const response = await fetch(`${gateway.url}/manage/v1/openapi.json`)
    expect(response.status).toBe(200)
    const doc = (await response.json()) as { paths: Record<string, unknown> }
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining([
      "/manage/v1/guardrails",
      "/manage/v1/guardrails/{uuid}",
      "/manage/v1/guardrails/check",
      "/manage/v1/policies",
      "/manage/v1/provider-keys",
      "/manage/v1/inference-log"
    ]))
  })
})
