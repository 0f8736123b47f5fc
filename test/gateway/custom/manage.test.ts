import { Effect, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { formatApiKey } from "../../../src/auth/ApiKey.ts"
import { SqlBackends } from "../../support/database.ts"
import { type ManagedGateway, newOrg, startManagedGateway, withClient } from "../manage/harness.ts"

type Org = { uuid: string; secret: string }

/**
 * Registration through the management API of the gateway as the server
 * mounts it (production vetting, real database). Only address literals are
 * registered here, so nothing reaches a resolver; names are covered with the
 * test resolver in ssrf.test.ts and relay.test.ts.
 */
describe.each(SqlBackends)("custom providers in the management API on $name", ({ layer }) => {
  let gateway: ManagedGateway
  let acme: Org
  let other: Org

  beforeAll(async () => {
    gateway = await startManagedGateway(layer)
    acme = await newOrg(gateway, "acme")
    other = await newOrg(gateway, "other")
  }, 60_000)
  afterAll(() => gateway?.close())

  const call = (path: string, org: Org, init?: RequestInit) =>
    fetch(`${gateway.url}/manage/v1${path}`, {
      ...init,
      headers: { "content-type": "application/json", authorization: formatApiKey(org.uuid, org.secret) }
    })
  const register = (org: Org, body: unknown) =>
    call("/custom-providers", org, { method: "POST", body: JSON.stringify(body) })
  const refusal = async (response: Response) => {
    expect(response.status).toBe(400)
    return ((await response.json()) as { error: { code: string; message: string } }).error
  }

  it("registers, lists and removes a provider (the public literal is never dialled)", async () => {
    const created = await withClient(gateway, acme, (client) =>
      client.customProviders.add({
        payload: {
          slug: "acme-llm",
          base_url: "https://93.184.216.34/v1/",
          surfaces: ["chat", "messages"],
          auth: "header:X-Llm-Key",
          default_headers: { "X-Version": "3" }
        }
      }))
    expect(created).toMatchObject({
      org_uuid: acme.uuid,
      slug: "acme-llm",
      base_url: "https://93.184.216.34/v1",
      surfaces: ["chat", "messages"],
      auth: "header:x-llm-key",
      default_headers: { "x-version": "3" }
    })
    const listed = await withClient(gateway, acme, (client) => client.customProviders.list())
    expect(listed.data.map((p) => p.slug)).toEqual(["acme-llm"])
    expect((await withClient(gateway, other, (client) => client.customProviders.list())).data).toEqual([])

    // Its key goes in the vault under the slug, for the owner only.
    expect(
      (await call("/provider-keys/acme-llm", acme, { method: "PUT", body: JSON.stringify({ key: "sk-acme" }) })).status
    ).toBe(204)
    const foreignKey = await refusal(
      await call("/provider-keys/acme-llm", other, { method: "PUT", body: JSON.stringify({ key: "sk-x" }) })
    )
    expect(foreignKey.code).toBe("unknown_provider")
    const stored = await Effect.runPromise(gateway.providerKeys.get(acme.uuid, "acme-llm"))
    expect(Redacted.value(stored)).toBe("sk-acme")

    const duplicate = await refusal(
      await register(acme, { slug: "acme-llm", base_url: "https://93.184.216.34/v2", surfaces: ["chat"] })
    )
    expect(duplicate).toMatchObject({
      code: "invalid_custom_provider",
      message: "slug \"acme-llm\" is already registered"
    })

    expect((await call("/custom-providers/acme-llm", acme, { method: "DELETE" })).status).toBe(204)
    // Removal takes the key with it: a later provider of the same slug never receives it.
    const gone = await Effect.runPromise(Effect.flip(gateway.providerKeys.get(acme.uuid, "acme-llm")))
    expect(gone._tag).toBe("ProviderKeyMissing")
    const again = await call("/custom-providers/acme-llm", acme, { method: "DELETE" })
    expect(again.status).toBe(404)
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe("custom_provider_not_found")
  })

  it.each([
    [{ slug: "openai", base_url: "https://93.184.216.34/v1", surfaces: ["chat"] }, /built-in provider/],
    [{ slug: "kiro", base_url: "https://93.184.216.34/v1", surfaces: ["chat"] }, /built-in provider/],
    [{ slug: "manage", base_url: "https://93.184.216.34/v1", surfaces: ["chat"] }, /reserved/],
    [{ slug: "Bad Slug", base_url: "https://93.184.216.34/v1", surfaces: ["chat"] }, /lower-case/],
    [{ slug: "plain", base_url: "http://93.184.216.34/v1", surfaces: ["chat"] }, /must be https/],
    [{ slug: "creds", base_url: "https://user:pw@93.184.216.34/v1", surfaces: ["chat"] }, /credentials/],
    [{ slug: "query", base_url: "https://93.184.216.34/v1?x=1", surfaces: ["chat"] }, /query/],
    [{ slug: "none", base_url: "https://93.184.216.34/v1", surfaces: [] }, /at least one surface/],
    [{ slug: "auth", base_url: "https://93.184.216.34/v1", surfaces: ["chat"], auth: "header:host" }, /auth/],
    [{
      slug: "hdr",
      base_url: "https://93.184.216.34/v1",
      surfaces: ["chat"],
      default_headers: { authorization: "Bearer x" }
    }, /not allowed/],
    [{
      slug: "crlf",
      base_url: "https://93.184.216.34/v1",
      surfaces: ["chat"],
      default_headers: { "x-a": "1\r\nx-b: 2" }
    }, /printable/],
    [{
      slug: "twice",
      base_url: "https://93.184.216.34/v1",
      surfaces: ["chat"],
      default_headers: { "X-Version": "1", "x-version": "2" }
    }, /given twice/],
    [
      { slug: "loop", base_url: "https://127.0.0.1/v1", surfaces: ["chat"] },
      /127\.0\.0\.1 is not a public address \(loopback\)/
    ],
    [{ slug: "loop-dec", base_url: "https://2130706433/v1", surfaces: ["chat"] }, /not a public address \(loopback\)/],
    [{ slug: "loop6", base_url: "https://[::1]/v1", surfaces: ["chat"] }, /not a public address \(loopback\)/],
    [{ slug: "meta", base_url: "https://169.254.169.254/v1", surfaces: ["chat"] }, /link-local/],
    [{ slug: "private", base_url: "https://10.1.2.3/v1", surfaces: ["chat"] }, /private/]
  ])("refuses %j with a 400 saying why", async (body, message) => {
    const error = await refusal(await register(acme, body))
    expect(error.code).toBe("invalid_custom_provider")
    expect(error.message).toMatch(message)
  })

  it("a key stored while its provider is removed never outlives the provider", async () => {
    const keys = async () =>
      ((await (await call("/provider-keys", acme)).json()) as { data: Array<{ provider: string }> }).data
    for (let trial = 0; trial < 20; trial++) {
      const slug = `race-${trial}`
      expect((await register(acme, { slug, base_url: "https://93.184.216.34/v1", surfaces: ["chat"] })).status).toBe(
        201
      )
      const [stored, removed] = await Promise.all([
        call(`/provider-keys/${slug}`, acme, { method: "PUT", body: JSON.stringify({ key: "sk-race" }) }),
        call(`/custom-providers/${slug}`, acme, { method: "DELETE" })
      ])
      expect(removed.status).toBe(204)
      // Stored before the removal (and removed with it), or refused: the provider was gone.
      expect([204, 400]).toContain(stored.status)
      if (stored.status === 400) {
        expect((await stored.json() as { error: { code: string } }).error.code).toBe("unknown_provider")
      }
      expect((await keys()).map((k) => k.provider)).not.toContain(slug)
    }
  }, 60_000)

  it("refuses the kiro surface (request validation: not one of chat, responses, messages)", async () => {
    const response = await register(acme, { slug: "k", base_url: "https://93.184.216.34/v1", surfaces: ["kiro"] })
    expect(response.status).toBe(400)
  })
})
