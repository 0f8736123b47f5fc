import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { memoryCustomProviderStore } from "../../../src/providers/custom/CustomProviderStore.ts"
import { VettingPolicy } from "../../../src/providers/custom/VettingPolicy.ts"
import {
  type Canary,
  chat,
  type CustomGateway,
  ORG,
  startCanary,
  startCustomGateway,
  tableResolver
} from "./harness.ts"

/**
 * Hostile targets under the production vetting policy. Literal targets are
 * loopback in every notation, pointed at a canary that counts connections;
 * every other reserved range comes only from the test resolver, so nothing
 * here could dial beyond 127.0.0.0/8 even if vetting were broken for the
 * literals, and a correct gateway dials nothing at all.
 */

/** Names and what the test resolver answers for them. */
const RESOLVED: Record<string, ReadonlyArray<string>> = {
  "localhost": ["127.0.0.1"],
  "localhost.": ["127.0.0.1"],
  "private-a.test": ["10.0.0.1"],
  "private-b.test": ["172.16.5.4"],
  "private-c.test": ["192.168.1.1"],
  "metadata.test": ["169.254.169.254"],
  "cgnat.test": ["100.64.0.1"],
  "doc-a.test": ["192.0.2.1"],
  "doc-b.test": ["198.51.100.1"],
  "doc-c.test": ["203.0.113.1"],
  "bench.test": ["198.18.0.1"],
  "multicast.test": ["224.0.0.1"],
  "broadcast.test": ["255.255.255.255"],
  "class-e.test": ["240.0.0.1"],
  "this-network.test": ["0.0.0.0"],
  "loopback6.test": ["::1"],
  "unspecified6.test": ["::"],
  "ula.test": ["fd00::1"],
  "site-local.test": ["fec0::1"],
  "link-local6.test": ["fe80::1%eth0"],
  "mapped.test": ["::ffff:10.0.0.1"],
  "mapped-hex.test": ["::ffff:7f00:1"],
  "compatible.test": ["::127.0.0.1"],
  "nat64.test": ["64:ff9b::a9fe:a9fe"],
  "six-to-four.test": ["2002:c0a8:101::1"],
  "doc6.test": ["2001:db8::1"],
  "decimal-answer.test": ["2130706433"],
  "hex-answer.test": ["0x7f000001"],
  "garbage-answer.test": ["not-an-address"],
  "two-answers.test": ["10.0.0.1", "192.168.0.1"]
}

const literalTargets = (port: number): ReadonlyArray<string> => [
  `https://127.0.0.1:${port}/v1`,
  `https://2130706433:${port}/v1`,
  `https://0177.0.0.1:${port}/v1`,
  `https://0x7f000001:${port}/v1`,
  `https://127.1:${port}/v1`,
  `https://127.0.0.1.:${port}/v1`,
  `https://[::1]:${port}/v1`,
  `https://[::ffff:127.0.0.1]:${port}/v1`,
  `https://[::ffff:7f00:1]:${port}/v1`,
  `https://0.0.0.0:${port}/v1`,
  `https://[::]:${port}/v1`
]

describe("custom providers: hostile targets are refused with nothing sent", () => {
  let canary: Canary
  let gateway: CustomGateway
  const targets: Array<{ slug: string; url: string }> = []

  beforeAll(async () => {
    canary = await startCanary()
    const store = memoryCustomProviderStore()
    const urls = [
      ...literalTargets(canary.port),
      ...Object.keys(RESOLVED).map((name) => `https://${name}:${canary.port}/v1`)
    ]
    // Planted directly: these are rows whose address went bad after registration (registration itself refuses them, below).
    for (const [i, url] of urls.entries()) {
      const slug = `hostile-${i}`
      targets.push({ slug, url })
      await Effect.runPromise(store.insert(ORG, {
        slug,
        baseUrl: new URL(url).href.replace(/\/$/, ""),
        surfaces: ["chat"],
        auth: "bearer",
        defaultHeaders: {}
      }))
    }
    gateway = await startCustomGateway({ resolver: tableResolver(RESOLVED), policy: VettingPolicy.layer, store })
  })
  afterAll(async () => {
    await gateway?.close()
    await canary?.close()
  })

  it("has at least 30 hostile targets", () => {
    expect(targets.length).toBeGreaterThanOrEqual(30)
  })

  it("answers 502 upstream_blocked for every one, naming no address, and the canary sees no connection", async () => {
    for (const target of targets) {
      const response = await chat(gateway, target.slug)
      const text = await response.text()
      expect({ url: target.url, status: response.status }).toEqual({ url: target.url, status: 502 })
      const body = JSON.parse(text) as { error: { code: string; message: string } }
      expect(body.error.code, target.url).toBe("upstream_blocked")
      expect(body.error.message).not.toMatch(/127\.|10\.0|::|169\.254|\d+\.\d+\.\d+\.\d+/)
    }
    expect(canary.connections()).toBe(0)
  })

  it("refuses every one at registration with a clear 400-class message", async () => {
    for (const target of targets) {
      const refused = await Effect.runPromise(Effect.flip(gateway.providers.add(ORG, {
        slug: `again-${target.slug}`,
        base_url: target.url,
        surfaces: ["chat"]
      })))
      expect(refused.reason._tag, target.url).toBe("CustomProviderInvalid")
      expect(refused.message, target.url).toMatch(/^base_url: .*(not a public address|only to public addresses)/)
    }
    expect(canary.connections()).toBe(0)
  })

  it("a name that does not resolve is refused at registration with the same words as a reserved one", async () => {
    const refused = await Effect.runPromise(Effect.flip(gateway.providers.add(ORG, {
      slug: "nowhere",
      base_url: "https://nowhere.test/v1",
      surfaces: ["chat"]
    })))
    const reserved = await Effect.runPromise(Effect.flip(gateway.providers.add(ORG, {
      slug: "somewhere",
      base_url: "https://private-a.test/v1",
      surfaces: ["chat"]
    })))
    expect(refused.message.replace("nowhere.test", "X")).toBe(reserved.message.replace("private-a.test", "X"))
  })
})
