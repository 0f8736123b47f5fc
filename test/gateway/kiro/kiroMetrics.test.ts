import { Context, Redacted } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { send } from "../http.ts"
import { type KiroGateway, ORG, REFRESH_TOKEN, run, SERVICE_KEY, startKiroGateway } from "./harness.ts"

/**
 * Kiro's relayed calls are in the gateway's upstream histograms (docs/operations.md, "Gateway"),
 * as provider and surface `kiro`, whether the inference log reads the stream or not. Read from
 * this process's registry, which the gateway built here records into.
 */
let gateway: KiroGateway
beforeAll(async () => {
  gateway = await startKiroGateway()
  await run(
    gateway.vault.set(ORG, "kiro", Redacted.make(JSON.stringify({ refreshToken: REFRESH_TOKEN, authMethod: "social" })))
  )
})
afterAll(() => gateway.close())

const scrape = () => PrometheusMetrics.formatUnsafe(Context.empty())
const valueOf = (text: string, series: string) => {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}
const DURATION = `vdb_gateway_upstream_duration_seconds_count{provider="kiro",surface="kiro"}`
const FIRST_BYTE = `vdb_gateway_upstream_first_byte_seconds_count{provider="kiro",surface="kiro"}`

const generate = () =>
  send(`${gateway.url}/kiro/${ORG}/v1/generateAssistantResponse`, {
    headers: { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({
      conversationState: {
        chatTriggerType: "MANUAL",
        conversationId: "c-1",
        currentMessage: { userInputMessage: { content: "hi", modelId: "claude-sonnet-4.5", origin: "AI_EDITOR" } }
      }
    })
  })

describe("Kiro in the upstream histograms", () => {
  it("times each generateAssistantResponse call, with the inference log off and on", async () => {
    const before = scrape()
    expect((await generate()).status).toBe(200)
    await run(gateway.inferenceLog.setEnabled(ORG, true))
    expect((await generate()).status).toBe(200)
    await run(gateway.inferenceLog.setEnabled(ORG, false))
    const after = scrape()
    expect(valueOf(after, DURATION) - valueOf(before, DURATION)).toBe(2)
    expect(valueOf(after, FIRST_BYTE) - valueOf(before, FIRST_BYTE)).toBe(2)
    // The stream took at least its pieces' pauses: the duration is to the last byte, not the headers.
    const sum = (text: string, name: string) => valueOf(text, `${name}_sum{provider="kiro",surface="kiro"}`)
    expect(sum(after, "vdb_gateway_upstream_duration_seconds") - sum(before, "vdb_gateway_upstream_duration_seconds"))
      .toBeGreaterThanOrEqual(
        sum(after, "vdb_gateway_upstream_first_byte_seconds") -
          sum(before, "vdb_gateway_upstream_first_byte_seconds")
      )
    // ListAvailableModels is not an inference call.
    const listed = await send(`${gateway.url}/kiro/${ORG}/v1/ListAvailableModels`, {
      method: "GET",
      headers: { authorization: `Bearer ${SERVICE_KEY}` }
    })
    expect(listed.status).toBe(200)
    expect(valueOf(scrape(), DURATION)).toBe(valueOf(after, DURATION))
  })
})
