import fc from "fast-check"
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

  it.each([
    "",
    "not a url",
    "/mcp",
    "https://",
    "https://exa mple.com/",
    "ftp://evil.example/mcp",
    "file:///etc/passwd",
    "javascript:alert(1)",
    "https://./mcp"
  ])(
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

describe("every spelling of one server compares equal (property)", () => {
  const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}[a-z0-9]$/)
  const segment = fc.stringMatching(/^[A-Za-z0-9\-._~]{1,8}$/).filter((s) => s !== "." && s !== "..")
  const server = fc.record({
    host: fc.array(label, { minLength: 1, maxLength: 3 }),
    path: fc.array(segment, { maxLength: 4 })
  })

  /** A random case for each letter. */
  const recase = (text: string, flips: ReadonlyArray<boolean>) =>
    [...text].map((c, i) => flips[i % flips.length] ? c.toUpperCase() : c.toLowerCase()).join("")
  /** Each character percent-encoded or not. */
  const encode = (text: string, picks: ReadonlyArray<boolean>) =>
    [...text].map((c, i) => picks[i % picks.length] ? `%${c.charCodeAt(0).toString(16).padStart(2, "0")}` : c).join("")

  const spelling = fc.record({
    flips: fc.array(fc.boolean(), { minLength: 1, maxLength: 7 }),
    picks: fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }),
    dot: fc.boolean(),
    port: fc.boolean(),
    user: fc.constantFrom("", "u@", "u:p@", "%40@"),
    detour: fc.constantFrom("", "x/../", "./", "%2e/", "a/b/../../"),
    slashes: fc.constantFrom("", "/", "//"),
    tail: fc.constantFrom("", "?x=1", "#a", "?a=b#c", "?")
  })

  it("case, trailing dot, default port, user information, escapes, dot segments, trailing slashes, query, fragment", () => {
    fc.assert(
      fc.property(server, spelling, ({ host, path }, s) => {
        const hostname = host.join(".") + ".example"
        const plain = `https://${hostname}/${path.join("/")}`
        const spelled =
          `${recase("https", s.flips)}://${s.user}${recase(hostname, s.flips)}${s.dot ? "." : ""}${
            s.port ? ":443" : ""
          }` +
          `/${s.detour}${path.map((p) => encode(p, s.picks)).join("/")}${s.slashes}${s.tail}`
        expect(canonicalMcpUrl(spelled)).toBe(canonicalMcpUrl(plain))
        expect(canonicalMcpUrl(plain)).toBe(`https://${hostname}${path.length === 0 ? "" : `/${path.join("/")}`}`)
      }),
      { numRuns: 500 }
    )
  })

  it("another host, port or path is another server", () => {
    fc.assert(
      fc.property(server, server, (a, b) => {
        const url = (s: typeof a) => `https://${s.host.join(".")}.example/${s.path.join("/")}`
        fc.pre(a.host.join(".") !== b.host.join(".") || a.path.join("/") !== b.path.join("/"))
        expect(canonicalMcpUrl(url(a))).not.toBe(canonicalMcpUrl(url(b)))
        expect(canonicalMcpUrl(url(a).replace(".example/", ".example:8443/"))).not.toBe(canonicalMcpUrl(url(a)))
      }),
      { numRuns: 300 }
    )
  })
})
