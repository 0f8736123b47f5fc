import { describe, expect, it } from "vitest"
import { requestsIn } from "../../src/mcp/McpGate.ts"

// What a POST body costs against the organization's limits (src/mcp/McpGate.ts).
const cost = (text: string) => requestsIn(new TextEncoder().encode(text).buffer as ArrayBuffer)
const call = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "get_organization" } })

describe("requestsIn", () => {
  it("a batch costs one per request in it; its notifications and responses nothing", () => {
    expect(cost(JSON.stringify([call(1), call(2), call(3)]))).toBe(3)
    expect(
      cost(
        JSON.stringify([call(1), { jsonrpc: "2.0", method: "notifications/cancelled" }, {
          jsonrpc: "2.0",
          id: 9,
          result: {}
        }])
      )
    ).toBe(1)
    expect(cost(` \n\t${JSON.stringify(Array.from({ length: 300 }, (_, i) => call(i)))}`)).toBe(300)
  })

  it("a batch behind a byte order mark is still counted", () => {
    expect(cost(`\uFEFF${JSON.stringify([call(1), call(2)])}`)).toBe(2)
  })

  it("anything else costs one: a single message, a notification, an empty batch, a body that does not parse", () => {
    expect(cost(JSON.stringify(call(1)))).toBe(1)
    expect(cost(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }))).toBe(1)
    expect(cost("[]")).toBe(1)
    expect(cost(`[${JSON.stringify(call(1))},`)).toBe(1)
    expect(cost("")).toBe(1)
  })
})
