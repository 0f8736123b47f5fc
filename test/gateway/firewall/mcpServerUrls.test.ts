import { beforeEach, describe, expect, it } from "vitest"
import { ORG } from "./harness.ts"
import { policyGateway } from "./policyClient.ts"

/**
 * Issue 32 §5: MCP server URLs are compared as URLs, through the real
 * gateway (a stub provider records what reached it): every spelling of a
 * denied server is refused on messages `mcp_servers` and responses `mcp`
 * tools, an allowlist admits every spelling of a listed one, and a URL that
 * does not parse is refused.
 */

const { add, current, post } = policyGateway()
const viaMessages = (url: unknown, name = "tools") =>
  post(`/anthropic/${ORG}/v1/messages`, {
    model: "claude-ok",
    max_tokens: 8,
    messages: [{ role: "user", content: "hi" }],
    mcp_servers: [{ type: "url", name, url }]
  })
const viaResponses = (url: unknown, label = "tools") =>
  post(`/openai/${ORG}/v1/responses`, {
    model: "gpt-4.1",
    input: "hi",
    tools: [{ type: "mcp", server_label: label, server_url: url, require_approval: "never" }]
  })

const status = async (response: Response) => {
  const body = await response.json() as any
  return response.status === 200 ? "pass" : `${response.status} ${body.error?.code}`
}

/** Spellings of https://evil.example/mcp that a client, a provider and the server read as that server. */
const SPELLINGS = [
  "https://evil.example/mcp",
  "https://evil.example/mcp/",
  "https://evil.example/mcp//",
  "https://evil.example/mcp?x=1",
  "https://evil.example/mcp#a",
  "https://evil.example:443/mcp",
  "HTTPS://EVIL.EXAMPLE/mcp",
  "https://Evil.Example/mcp",
  "https://evil.example./mcp",
  "https://u@evil.example/mcp",
  "https://u:p@evil.example/mcp",
  "https://evil.example/%6Dcp",
  "https://evil.example/m%63p",
  "https://evil.example/x/../mcp",
  "https://evil.example/./mcp",
  "https://evil.example/x/%2e%2e/mcp",
  "https://evil.example\\mcp",
  "https://ev%69l.example/mcp",
  "https://ＥＶＩＬ.example/mcp",
  " https://evil.example/mcp "
]

describe("a denied MCP server URL", () => {
  beforeEach(() => add({ kind: "mcp", effect: "deny", value: "https://evil.example/mcp" }))

  it.each(SPELLINGS)("%s is refused on messages and responses (passed before but the first)", async (url) => {
    expect(await status(await viaMessages(url))).toBe("403 mcp_denied")
    expect(await status(await viaResponses(url))).toBe("403 mcp_denied")
    expect(current().upstream.received).toHaveLength(0)
  })

  it("other servers pass, and the refusal never quotes the URL's query or user information", async () => {
    for (
      const url of [
        "https://evil.example/mcp2",
        "https://evil.example/other/mcp",
        "http://evil.example/mcp",
        "https://evil.example:8443/mcp"
      ]
    ) {
      expect(await status(await viaMessages(url)), url).toBe("pass")
    }
    const refused = await (await viaResponses("https://secret-user:pw@evil.example/mcp?token=s3cr3t", "")).json() as any
    expect(refused.error.message).toBe(
      "MCP server https://evil.example/mcp is not allowed by this organization's policy"
    )
  })

  it("a URL that does not parse, or a URL field that is not a string, is refused", async () => {
    for (
      const url of ["not a url", "https://", "https://exa mple.com/mcp", "ftp://evil.example/mcp", "", 42, null, [
        "https://ok.example/mcp"
      ]]
    ) {
      expect(await status(await viaMessages(url)), JSON.stringify(url)).toBe("403 mcp_denied")
      expect(await status(await viaResponses(url)), JSON.stringify(url)).toBe("403 mcp_denied")
    }
    expect(current().upstream.received).toHaveLength(0)
  })

  it("a deny entry written in another spelling denies the same server", async () => {
    await current().reset()
    await add({ kind: "mcp", effect: "deny", value: "HTTPS://Evil.Example:443/mcp/?from=docs" })
    expect(await status(await viaMessages("https://evil.example/mcp"))).toBe("403 mcp_denied")
  })
})

describe("an MCP allowlist of URLs", () => {
  beforeEach(() => add({ kind: "mcp", effect: "allow", value: "https://evil.example/mcp" }))

  it.each(SPELLINGS)("admits %s", async (url) => {
    expect(await status(await viaResponses(url))).toBe("pass")
  })

  it("refuses another server even when the client names it after an allowed entry", async () => {
    expect(await status(await viaMessages("https://other.example/mcp"))).toBe("403 mcp_denied")
    expect(await status(await viaMessages("https://other.example/mcp", "https://evil.example/mcp"))).toBe(
      "403 mcp_denied"
    )
    expect(await status(await viaResponses("https://other.example/mcp", "https://evil.example/mcp"))).toBe(
      "403 mcp_denied"
    )
  })
})

describe("an MCP strip entry", () => {
  it("takes out every spelling of the server", async () => {
    await add({ kind: "mcp", effect: "strip", value: "https://evil.example/mcp" })
    const response = await post(`/anthropic/${ORG}/v1/messages`, {
      model: "claude-ok",
      max_tokens: 8,
      messages: [{ role: "user", content: "hi" }],
      mcp_servers: [{ type: "url", name: "a", url: "HTTPS://EVIL.EXAMPLE:443/mcp/?x=1" }, {
        type: "url",
        name: "b",
        url: "https://ok.example/mcp"
      }]
    })
    expect(response.status).toBe(200)
    expect(response.headers.get("x-gateway-firewall-stripped")).toBe("1")
    const sent = JSON.parse(current().upstream.received[0]!.body.toString())
    expect(sent.mcp_servers.map((s: any) => s.name)).toEqual(["b"])
  })
})
