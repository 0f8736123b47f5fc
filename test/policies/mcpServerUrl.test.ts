import { describe, expect, it } from "vitest"
import { canonicalMcpEntry, canonicalMcpUrl, looksLikeUrl } from "../../src/policies/McpServerUrl.ts"

describe("canonicalMcpUrl", () => {
  it.each([
    ["https://evil.example/mcp", "https://evil.example/mcp"],
    ["https://evil.example/mcp/", "https://evil.example/mcp"],
    ["https://evil.example/mcp///", "https://evil.example/mcp"],
    ["https://evil.example/", "https://evil.example"],
    ["https://evil.example", "https://evil.example"],
    ["https://evil.example/mcp?x=1#a", "https://evil.example/mcp"],
    ["https://evil.example:443/mcp", "https://evil.example/mcp"],
    ["http://evil.example:80/mcp", "http://evil.example/mcp"],
    ["https://evil.example:8443/mcp", "https://evil.example:8443/mcp"],
    ["http://evil.example:443/mcp", "http://evil.example:443/mcp"],
    ["HTTPS://EVIL.EXAMPLE/mcp", "https://evil.example/mcp"],
    ["https://evil.example./mcp", "https://evil.example/mcp"],
    ["https://evil.example../mcp", "https://evil.example/mcp"],
    ["https://u:p@evil.example/mcp", "https://evil.example/mcp"],
    ["https://evil.example/%6D%63%70", "https://evil.example/mcp"],
    ["https://evil.example/a%2fb", "https://evil.example/a%2Fb"],
    ["https://evil.example/a%7eb%5F", "https://evil.example/a~b_"],
    ["https://evil.example/a/b/../../mcp", "https://evil.example/mcp"],
    ["https://evil.example/a/%2E%2e/mcp", "https://evil.example/mcp"],
    ["https://evil.example\\mcp", "https://evil.example/mcp"],
    ["https://bücher.example/mcp", "https://xn--bcher-kva.example/mcp"],
    ["https://BÜCHER.example/mcp", "https://xn--bcher-kva.example/mcp"],
    ["https://0x7f.1/mcp", "https://127.0.0.1/mcp"],
    ["https://[0:0::1]:443/mcp", "https://[::1]/mcp"],
    ["\thttps://evil.example/m\ncp ", "https://evil.example/mcp"],
    // As every WHATWG parser reads it: the host is `mcp`.
    ["https:///mcp", "https://mcp"]
  ])("%s -> %s", (raw, canonical) => {
    expect(canonicalMcpUrl(raw)).toBe(canonical)
  })

  it("keeps what tells servers apart: the path's case, inner slashes, the port, the scheme", () => {
    expect(canonicalMcpUrl("https://evil.example/MCP")).toBe("https://evil.example/MCP")
    expect(canonicalMcpUrl("https://evil.example/a//mcp")).toBe("https://evil.example/a//mcp")
  })

  it.each(["", "not a url", "/mcp", "https://", "https://exa mple.com/", "ftp://evil.example/mcp", "file:///etc/passwd", "javascript:alert(1)", "https://./mcp"])(
    "%j is not a server URL",
    (raw) => {
      expect(canonicalMcpUrl(raw)).toBeUndefined()
    }
  )
})

describe("policy entries", () => {
  it("a URL entry is canonical; a server name stays as written", () => {
    expect(looksLikeUrl("https://x.example/mcp")).toBe(true)
    expect(looksLikeUrl("docs")).toBe(false)
    expect(canonicalMcpEntry("HTTPS://X.example:443/mcp/?a=1")).toBe("https://x.example/mcp")
    expect(canonicalMcpEntry("Docs Server")).toBe("Docs Server")
    expect(canonicalMcpEntry("https://exa mple/")).toBe("https://exa mple/")
  })
})
