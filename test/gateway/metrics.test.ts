import { Context, Effect } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { UsageTap } from "../../src/metrics/TokenUsage.ts"
import { type Gateway, ORG, SERVICE_KEY, startGateway } from "./harness.ts"

/**
 * The gateway's upstream series (docs/operations.md, "Gateway"): latency and time to first byte
 * by provider and surface, tokens by provider and model read from the providers' usage objects,
 * streams included, and nonce outcomes. Read from this process's registry, which the gateway
 * built here records into.
 */
let gateway: Gateway

beforeAll(async () => {
  gateway = await startGateway()
})
afterAll(async () => {
  await gateway?.close()
})

const scrape = () => PrometheusMetrics.formatUnsafe(Context.empty())
const valueOf = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
  const response = await fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  expect(response.status, text).toBe(200)
  return text
}
const openai = { authorization: `Bearer ${SERVICE_KEY}` }
const anthropic = { "x-api-key": SERVICE_KEY, "anthropic-version": "2023-06-01" }

const tokens = (provider: string, model: string, direction: string) =>
  `vdb_gateway_tokens_total{provider="${provider}",model="${model}",direction="${direction}"}`

describe("gateway metrics", () => {
  it("times upstream calls by provider and surface, and counts the tokens each answer reports", async () => {
    const before = scrape()
    const latency = `vdb_gateway_upstream_duration_seconds_count{provider="openai",surface="chat"}`
    const firstByte = `vdb_gateway_upstream_first_byte_seconds_count{provider="openai",surface="chat"}`
    await post(
      `/openai/${ORG}/v1/chat/completions`,
      { model: "gpt-m1", messages: [{ role: "user", content: "hi" }] },
      openai
    )
    await post(`/openai/${ORG}/v1/responses`, { model: "gpt-m1", input: "hi" }, openai)
    await post(`/openai/${ORG}/v1/responses`, { model: "gpt-m1", input: "hi", stream: true }, openai)
    await post(`/anthropic/${ORG}/v1/messages`, {
      model: "claude-m1",
      max_tokens: 9,
      messages: [{ role: "user", content: "hi" }]
    }, anthropic)
    await post(`/anthropic/${ORG}/v1/messages`, {
      model: "claude-m1",
      max_tokens: 9,
      stream: true,
      messages: [{ role: "user", content: "hi" }]
    }, anthropic)
    const after = scrape()
    expect(valueOf(after, latency) - valueOf(before, latency)).toBe(1)
    expect(valueOf(after, firstByte) - valueOf(before, firstByte)).toBe(1)
    expect(valueOf(after, `vdb_gateway_upstream_duration_seconds_count{provider="anthropic",surface="messages"}`))
      .toBeGreaterThanOrEqual(2)
    // Chat 5 + 6, responses 5 + 4 twice (the stream's final response.completed, not response.created as well).
    expect(valueOf(after, tokens("openai", "gpt-m1", "input"))).toBe(15)
    expect(valueOf(after, tokens("openai", "gpt-m1", "output"))).toBe(14)
    // Anthropic: 5 + 7 plain; the stream's message_start (5 in, 0 out) then message_delta's cumulative 2 out.
    expect(valueOf(after, tokens("anthropic", "claude-m1", "input"))).toBe(10)
    expect(valueOf(after, tokens("anthropic", "claude-m1", "output"))).toBe(9)
    expect(after).not.toContain(ORG)
  })

  it("reads a streamed usage object cut across chunks, relaying the bytes unchanged", async () => {
    const final = `data: ${
      JSON.stringify({
        id: "c",
        object: "chat.completion.chunk",
        choices: [],
        usage: { prompt_tokens: 31, completion_tokens: 17, total_tokens: 48 }
      })
    }\n\n`
    const cut = final.indexOf("completion_tokens")
    const frames = [
      `data: ${
        JSON.stringify({
          id: "c",
          object: "chat.completion.chunk",
          choices: [{ index: 0, delta: { content: "\"usage\": {\"prompt_tokens\": 999}" } }]
        })
      }\n\n`,
      final.slice(0, cut),
      final.slice(cut),
      "data: [DONE]\n\n"
    ]
    gateway.upstream.respondWith((_request, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      let i = 0
      const next = () => (i < frames.length ? res.write(frames[i++], () => setTimeout(next, 20)) : res.end())
      next()
    })
    try {
      const text = await post(`/openai/${ORG}/v1/chat/completions`, {
        model: "gpt-cut",
        stream: true,
        messages: [{ role: "user", content: "hi" }]
      }, openai)
      expect(text).toBe(frames.join(""))
    } finally {
      gateway.upstream.reset()
    }
    const after = scrape()
    expect(valueOf(after, tokens("openai", "gpt-cut", "input"))).toBe(31)
    expect(valueOf(after, tokens("openai", "gpt-cut", "output"))).toBe(17)
  })

  it("counts nonces issued and checked by outcome", async () => {
    const series = (outcome: string) => `vdb_gateway_nonces_total{outcome="${outcome}"}`
    const before = scrape()
    const response = await fetch(`${gateway.url}/openai/${ORG}/v1/nonces?count=3`, { headers: openai })
    expect(response.status).toBe(200)
    const { nonces } = await response.json() as { nonces: Array<string> }
    await Effect.runPromise(gateway.nonces.checkAll(ORG, [nonces[0]!, "forged"]))
    const after = scrape()
    expect(valueOf(after, series("issued")) - valueOf(before, series("issued"))).toBe(3)
    expect(valueOf(after, series("valid")) - valueOf(before, series("valid"))).toBe(1)
    expect(valueOf(after, series("unknown")) - valueOf(before, series("unknown"))).toBe(1)
  })

  it("the usage tap ignores text a model wrote and usage: null", () => {
    const tap = new UsageTap()
    tap.scan(Buffer.from(`{"content":"\\"usage\\":{\\"input_tokens\\":9}","usage":null}`))
    expect([tap.input, tap.output]).toEqual([-1, -1])
    tap.scan(Buffer.from(`{"usage":{"input_tokens":3,"cache_creation_input_tokens":50,"output_tokens":4}}`))
    expect([tap.input, tap.output]).toEqual([3, 4])
  })
})
