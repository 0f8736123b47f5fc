import { Effect, Layer, Redacted } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { UnsupportedContentEncoding } from "../../../schema/GatewayError.ts"
import { formatApiKey } from "../../../src/auth/ApiKey.ts"
import { ManageClient } from "../../../src/gateway/manage/ManageClient.ts"
import { SqlBackends } from "../../support/database.ts"
import { type ManagedGateway, newOrg, startManagedGateway, withClient } from "./harness.ts"

/**
 * Management input the attack report found mishandled: NUL and control characters in policy
 * values (a 500 from PostgreSQL), non-JSON and compressed bodies (the framework's plain-text 415),
 * provider keys that are no valid header value (stored, then every relay failed), and provider
 * slugs no provider answers to in policy entries (stored, never applied).
 */

type Org = { readonly uuid: string; readonly secret: string }
type Envelope = { error: { message: string; type: string; code: string } }

const failure = <A, E>(effect: Effect.Effect<A, E>) => Effect.flip(effect)

/** The typed client, with every request it sends changed by `change` before it leaves. */
const withAlteredClient = <A, E>(
  gateway: ManagedGateway,
  org: Org,
  change: (request: HttpClientRequest.HttpClientRequest) => HttpClientRequest.HttpClientRequest,
  f: (client: ManageClient["Service"]) => Effect.Effect<A, E>
) =>
  Effect.runPromise(
    Effect.flatMap(ManageClient, f).pipe(
      Effect.provide(
        ManageClient.layer({
          baseUrl: gateway.url,
          credentials: { orgUuid: org.uuid, secret: Redacted.make(org.secret) }
        }).pipe(
          Layer.provide(
            Layer.effect(HttpClient.HttpClient, Effect.map(HttpClient.HttpClient, HttpClient.mapRequest(change)))
          ),
          Layer.provide(FetchHttpClient.layer)
        )
      )
    )
  )

describe.each(SqlBackends)("management API input on $name", ({ layer }) => {
  let gateway: ManagedGateway
  let acme: Org

  beforeAll(async () => {
    gateway = await startManagedGateway(layer)
    acme = await newOrg(gateway, "acme input")
  }, 60_000)
  afterAll(() => gateway?.close())

  /** Exactly the headers given (a `Uint8Array` body gets no default Content-Type from fetch). */
  const send = (path: string, method: string, org: Org | undefined, body: string, headers: Record<string, string>) =>
    fetch(`${gateway.url}/manage/v1${path}`, {
      method,
      body: new TextEncoder().encode(body),
      headers: { ...(org === undefined ? {} : { authorization: formatApiKey(org.uuid, org.secret) }), ...headers }
    })
  const json = (path: string, method: string, org: Org, body: unknown) =>
    send(path, method, org, JSON.stringify(body), { "content-type": "application/json" })
  const envelope = async (response: Response) => ((await response.json()) as Envelope).error

  describe("policy values", () => {
    it("refuses NUL and other control characters with 400 invalid_policy, never a 500", async () => {
      for (
        const value of [
          "t\u0000x",
          "\u0000",
          "tab\there",
          "bell\u0007",
          "del\u007f",
          "csi\u009b2J",
          "line\u2028sep",
          "rtl\u202eoverride"
        ]
      ) {
        const response = await json("/policies", "POST", acme, { kind: "tool", effect: "deny", value })
        expect(response.status).toBe(400)
        const error = await envelope(response)
        expect(error).toMatchObject({ type: "invalid_request_error", code: "invalid_policy" })
        expect(error.message).toMatch(/control characters/)
      }
      const viaClient = await withClient(
        gateway,
        acme,
        (client) => failure(client.policies.add({ payload: { kind: "mcp", effect: "strip", value: "fs\u0000" } }))
      )
      expect(viaClient).toMatchObject({ _tag: "ManageInvalidRequest", code: "invalid_policy" })
      expect((await withClient(gateway, acme, (client) => client.policies.list())).data).toEqual([])
    })

    it("still takes a value with surrounding whitespace (trimmed) and non-ASCII text", async () => {
      const org = await newOrg(gateway, "policy values")
      const added = await withClient(gateway, org, (client) =>
        Effect.all([
          client.policies.add({ payload: { kind: "tool", effect: "deny", value: "  shell\n" } }),
          client.policies.add({ payload: { kind: "skill", effect: "deny", value: "résumé-écrivain" } })
        ]))
      expect(added.map((e) => e.value)).toEqual(["shell", "résumé-écrivain"])
    })
  })

  describe("provider slugs in policies", () => {
    it("refuses a provider that is neither built in nor the organization's, naming the known slugs", async () => {
      const org = await newOrg(gateway, "slug typos")
      for (
        const payload of [
          { kind: "provider", effect: "deny", value: "opnai" },
          { kind: "provider", effect: "allow", value: "NoSuchProvider" },
          { kind: "model", effect: "deny", provider: "nosuch", value: "gpt-4o" },
          { kind: "tool", effect: "strip", provider: "opnai", value: "shell" }
        ] as const
      ) {
        const refused = await withClient(gateway, org, (client) => failure(client.policies.add({ payload })))
        expect(refused).toMatchObject({ _tag: "ManageInvalidRequest", code: "unknown_provider" })
        expect(refused.message).toMatch(
          /^unknown provider "(opnai|nosuchprovider|nosuch)" \(known: .*\bopenai\b.*\banthropic\b.*, or a custom provider/
        )
      }
      expect((await withClient(gateway, org, (client) => client.policies.list())).data).toEqual([])
    })

    it("takes built-in slugs (any case) and the organization's own custom providers, not another's", async () => {
      const org = await newOrg(gateway, "slug owners")
      const stranger = await newOrg(gateway, "slug strangers")
      await withClient(
        gateway,
        org,
        (client) =>
          client.customProviders.add({
            payload: { slug: "acme-llm", base_url: "https://93.184.216.34/v1", surfaces: ["chat"] }
          })
      )
      const added = await withClient(gateway, org, (client) =>
        Effect.all([
          client.policies.add({ payload: { kind: "provider", effect: "deny", value: "OpenAI" } }),
          client.policies.add({ payload: { kind: "provider", effect: "deny", value: "acme-llm" } }),
          client.policies.add({ payload: { kind: "model", effect: "allow", provider: "acme-llm", value: "m-1" } }),
          client.policies.add({ payload: { kind: "tool", effect: "deny", provider: "groq", value: "shell" } })
        ]))
      expect(added.map((e) => [e.kind, e.provider, e.value])).toEqual([
        ["provider", null, "openai"],
        ["provider", null, "acme-llm"],
        ["model", "acme-llm", "m-1"],
        ["tool", "groq", "shell"]
      ])
      const theirs = await withClient(
        gateway,
        stranger,
        (client) =>
          failure(
            client.policies.add({ payload: { kind: "model", effect: "deny", provider: "acme-llm", value: "m-1" } })
          )
      )
      expect(theirs).toMatchObject({ _tag: "ManageInvalidRequest", code: "unknown_provider" })
    })
  })

  describe("request bodies", () => {
    it("answers a body that is not JSON with 415 unsupported_media_type in the dialect", async () => {
      const before = (await withClient(gateway, acme, (client) => client.guardrails.list())).data.length
      const rule = JSON.stringify({ name: "q", rule_type: "blocked_pattern", pattern: "x" })
      for (
        const [path, method, type] of [
          ["/guardrails", "POST", "text/plain"],
          ["/inference-log", "PUT", "application/x-www-form-urlencoded"],
          ["/guardrails", "POST", "multipart/form-data; boundary=x"],
          ["/policies", "POST", "application/vnd.api+json"],
          ["/guardrails/check", "POST", "text/plain;charset=UTF-8"]
        ] as const
      ) {
        const response = await send(path, method, acme, path === "/inference-log" ? `{"enabled":true}` : rule, {
          "content-type": type
        })
        expect(response.status).toBe(415)
        expect(response.headers.get("content-type")).toMatch(/^application\/json/)
        expect(await envelope(response)).toEqual({
          message: "send Content-Type: application/json",
          type: "invalid_request_error",
          code: "unsupported_media_type"
        })
      }
      expect((await withClient(gateway, acme, (client) => client.guardrails.list())).data).toHaveLength(before)
      expect(await withClient(gateway, acme, (client) => client.inferenceLog.get())).toEqual({ enabled: false })
    })

    it("takes JSON with parameters, or with no Content-Type at all, as before", async () => {
      const org = await newOrg(gateway, "media types")
      const charset = await send("/inference-log", "PUT", org, `{"enabled":true}`, {
        "content-type": "Application/JSON; charset=utf-8"
      })
      expect(charset.status).toBe(200)
      const bare = await send("/inference-log", "PUT", org, `{"enabled":false}`, {})
      expect(bare.status).toBe(200)
      expect(await bare.json()).toEqual({ enabled: false })
    })

    it("authenticates before judging the body: no credential is 401 whatever the Content-Type", async () => {
      const response = await send("/guardrails", "POST", undefined, "name=q", {
        "content-type": "application/x-www-form-urlencoded"
      })
      expect(response.status).toBe(401)
      expect((await envelope(response)).code).toBe("invalid_api_key")
    })

    it("refuses a compressed body with 415 unsupported_content_encoding, as the inference routes do", async () => {
      const expected = new UnsupportedContentEncoding()
      for (const coding of ["gzip", "br", "identity, gzip", "x-custom"]) {
        const response = await send(
          "/policies",
          "POST",
          acme,
          JSON.stringify({ kind: "tool", effect: "deny", value: "zipped" }),
          {
            "content-type": "application/json",
            "content-encoding": coding
          }
        )
        expect(response.status).toBe(415)
        expect(response.headers.get("accept-encoding")).toBe("identity")
        expect(await envelope(response)).toEqual({
          message: expected.message,
          type: "invalid_request_error",
          code: expected.code
        })
      }
      const identity = await send("/guardrails/check", "POST", acme, JSON.stringify({ text: "hi" }), {
        "content-type": "application/json",
        "content-encoding": "identity"
      })
      expect(identity.status).toBe(200)
      expect((await withClient(gateway, acme, (client) => client.policies.list())).data.map((e) => e.value)).not
        .toContain("zipped")
    })

    it("gives the typed client both 415s as its declared error", async () => {
      const asText = await withAlteredClient(
        gateway,
        acme,
        HttpClientRequest.setHeader("content-type", "text/plain"),
        (client) => failure(client.inferenceLog.set({ payload: { enabled: true } }))
      )
      expect(asText).toMatchObject({ _tag: "ManageUnsupportedMediaType", code: "unsupported_media_type" })
      const zipped = await withAlteredClient(
        gateway,
        acme,
        HttpClientRequest.setHeader("content-encoding", "gzip"),
        (client) => failure(client.guardrails.check({ payload: { text: "hi" } }))
      )
      expect(zipped).toMatchObject({ _tag: "ManageUnsupportedMediaType", code: "unsupported_content_encoding" })
      // Endpoints without a body are not judged by it.
      const listed = await withAlteredClient(
        gateway,
        acme,
        HttpClientRequest.setHeader("content-encoding", "gzip"),
        (client) => client.policies.list()
      )
      expect(listed.data).toBeInstanceOf(Array)
    })
  })

  describe("provider keys", () => {
    const secretMarker = "sk-abc-SECRET-MARKER"

    it("refuses a key that is no valid HTTP header value with 400 invalid_provider_key, never echoing it", async () => {
      const org = await newOrg(gateway, "bad keys")
      for (
        const key of [
          `${secretMarker}\r\nX-Injected: 1`,
          `${secretMarker}\u0000abc`,
          `${secretMarker}\nsk-line2`,
          `${secretMarker}\u007f`,
          `${secretMarker}\u2028x`,
          `${secretMarker}-\u{1F511}`
        ]
      ) {
        const response = await json("/provider-keys/openai", "PUT", org, { key })
        expect(response.status).toBe(400)
        const text = await response.text()
        expect(text).not.toContain("SECRET-MARKER")
        expect((JSON.parse(text) as Envelope).error).toMatchObject({
          type: "invalid_request_error",
          code: "invalid_provider_key"
        })
        expect((JSON.parse(text) as Envelope).error.message).toMatch(/not a valid HTTP header value/)
      }
      const viaClient = await withClient(
        gateway,
        org,
        (client) =>
          failure(
            client.providerKeys.set({
              params: { provider: "anthropic" },
              payload: { key: Redacted.make("sk-ant\r\nx") }
            })
          )
      )
      expect(viaClient).toMatchObject({ _tag: "ManageInvalidRequest", code: "invalid_provider_key" })
      expect((await withClient(gateway, org, (client) => client.providerKeys.list())).data).toEqual([])
    })

    it("still takes a key with a trailing newline (stored trimmed), and a kiro sign-in spread over lines", async () => {
      const org = await newOrg(gateway, "good keys")
      await withClient(
        gateway,
        org,
        (client) =>
          client.providerKeys.set({ params: { provider: "openai" }, payload: { key: Redacted.make("sk-from-echo\n") } })
      )
      expect(Redacted.value(await Effect.runPromise(gateway.providerKeys.get(org.uuid, "openai")))).toBe("sk-from-echo")
      const signIn = JSON.stringify({ refreshToken: "r-token", authMethod: "social" }, null, 2)
      expect(signIn).toContain("\n")
      await withClient(
        gateway,
        org,
        (client) => client.providerKeys.set({ params: { provider: "kiro" }, payload: { key: Redacted.make(signIn) } })
      )
      expect(Redacted.value(await Effect.runPromise(gateway.providerKeys.get(org.uuid, "kiro")))).toBe(signIn)
    })
  })
})
