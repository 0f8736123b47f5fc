import { Effect, Redacted } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { statusOf } from "../../schema/ErrorStatus.ts"
import { UpstreamClient, type UpstreamRequest } from "../../src/http/UpstreamClient.ts"
import { type ManagedGateway, newOrg, startManagedGateway } from "../gateway/manage/harness.ts"
import { type FakeUpstream, startFakeUpstream } from "../gateway/upstreams/FakeUpstream.ts"
import { PgliteTest } from "../support/database.ts"

/**
 * A provider key stored before keys were checked (CR/LF, NUL, a second line): undici refuses to
 * send it as a header. That is the stored credential's fault, not the network's: 502
 * `provider_credential_invalid` (spec 2), nothing sent, and the key in no message.
 */

const MARKER = "SECRET-MARKER"
const BAD_KEYS = [`sk-${MARKER}\r\nX-Injected: 1`, `sk-${MARKER}\u0000abc`, `sk-${MARKER}\nsk-line2`]

describe("UpstreamClient with a header value undici refuses", () => {
  let upstream: FakeUpstream
  beforeAll(async () => {
    upstream = await startFakeUpstream()
  })
  afterAll(() => upstream?.close())

  const request = (authorization: string, origin = upstream.url): UpstreamRequest => ({
    provider: "openai",
    origin,
    path: "/v1/chat/completions",
    method: "POST",
    headers: { authorization: `Bearer ${authorization}`, "content-type": "application/json" },
    body: new TextEncoder().encode(JSON.stringify({ model: "m", messages: [] }))
  })

  const outcomes = (req: UpstreamRequest) =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const client = yield* UpstreamClient.make({ timeout: "10 seconds" })
      const buffered = yield* Effect.flip(client.buffered(req))
      const streamed = yield* Effect.flip(client.stream(req))
      return [buffered, streamed] as const
    })))

  it("fails buffered and streamed calls with ProviderCredentialInvalid, sending nothing", async () => {
    upstream.reset()
    for (const key of BAD_KEYS) {
      for (const failure of await outcomes(request(key))) {
        expect(failure._tag).toBe("ProviderCredentialInvalid")
        // The status is the class's (`httpApiStatus`), stated once.
        expect({ status: statusOf(failure), code: failure.code, provider: failure.provider })
          .toEqual({ status: 502, code: "provider_credential_invalid", provider: "openai" })
        expect(failure.message).not.toContain(MARKER)
      }
    }
    expect(upstream.received).toHaveLength(0)
  })

  it("still blames the network when the provider cannot be reached", async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const { port } = closed.address() as AddressInfo
    await new Promise((resolve) => closed.close(resolve))
    for (const failure of await outcomes(request("sk-fine", `http://127.0.0.1:${port}`))) {
      expect(failure._tag).toBe("UpstreamUnreachable")
    }
  })
})

describe("a relayed request with a header-unsafe key stored before the check", () => {
  let upstream: FakeUpstream
  let gateway: ManagedGateway

  beforeAll(async () => {
    upstream = await startFakeUpstream()
    gateway = await startManagedGateway(PgliteTest, { VDB_PROVIDER_OPENAI_BASE_URL: `${upstream.url}/v1` })
  }, 60_000)
  afterAll(async () => {
    await gateway?.close()
    await upstream?.close()
  })

  it("answers 502 provider_credential_invalid, not upstream_unreachable, streamed or not", async () => {
    const org = await newOrg(gateway, "old key")
    const { key } = await Effect.runPromise(gateway.serviceKeys.issue(org.uuid))
    // The vault itself takes any value: this is what the management API and the CLI used to store.
    await Effect.runPromise(gateway.providerKeys.set(org.uuid, "openai", Redacted.make(BAD_KEYS[0]!)))
    upstream.reset()
    for (const stream of [false, true]) {
      const response = await fetch(`${gateway.url}/openai/${org.uuid}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "gpt-4o", stream, messages: [{ role: "user", content: "hi" }] })
      })
      expect(response.status).toBe(502)
      const text = await response.text()
      expect(JSON.parse(text).error).toMatchObject({ code: "provider_credential_invalid" })
      expect(text).not.toContain(MARKER)
    }
    expect(upstream.received).toHaveLength(0)
    // The same organization with a sound key is relayed: the upstream was there all along.
    await Effect.runPromise(gateway.providerKeys.set(org.uuid, "openai", Redacted.make("sk-sound")))
    const relayed = await fetch(`${gateway.url}/openai/${org.uuid}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] })
    })
    expect(relayed.status).toBe(200)
    expect(upstream.received[0]!.headers.authorization).toBe("Bearer sk-sound")
  })
})
