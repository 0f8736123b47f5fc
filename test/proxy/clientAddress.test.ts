import { describe, expect, it } from "vitest"
import {
  parseTrustedProxies,
  resolveClientAddress,
  resolveForwardedProto,
  TrustedProxiesInvalid
} from "../../src/server/ClientAddress.ts"

const list = (text: string) => {
  const parsed = parseTrustedProxies(text)
  if (parsed instanceof TrustedProxiesInvalid) throw new Error(parsed.message)
  return parsed
}

describe("VDB_TRUSTED_PROXIES", () => {
  it("parses addresses and CIDRs, IPv4 and IPv6, separated by commas or spaces; empty trusts no one", () => {
    expect(parseTrustedProxies("")).toBeUndefined()
    expect(parseTrustedProxies(" , ")).toBeUndefined()
    const trusted = list("10.0.0.0/8, 192.168.1.1 ::1,fd00::/8")
    expect(resolveClientAddress(trusted, "10.2.3.4", "198.51.100.7")).toBe("198.51.100.7")
    expect(resolveClientAddress(trusted, "192.168.1.1", "198.51.100.7")).toBe("198.51.100.7")
    expect(resolveClientAddress(trusted, "::1", "2001:db8::9")).toBe("2001:db8::9")
    expect(resolveClientAddress(trusted, "fd12::5", "198.51.100.7")).toBe("198.51.100.7")
    expect(resolveClientAddress(trusted, "192.168.1.2", "198.51.100.7")).toBe("192.168.1.2")
  })

  it("refuses a malformed entry, naming it", () => {
    for (const entry of ["10.0.0.0/33", "::/129", "localhost", "10.0.0.1/", "10.0.0.1/8x", "300.1.1.1", "fd00::/-1"]) {
      const parsed = parseTrustedProxies(`127.0.0.1, ${entry}`)
      expect(parsed).toBeInstanceOf(TrustedProxiesInvalid)
      expect((parsed as TrustedProxiesInvalid).message).toContain(`"${entry}"`)
    }
  })

  it("an untrusted peer's X-Forwarded-For and X-Forwarded-Proto are ignored", () => {
    const trusted = list("127.0.0.3")
    expect(resolveClientAddress(trusted, "127.0.0.1", "203.0.113.9")).toBe("127.0.0.1")
    expect(resolveClientAddress(undefined, "127.0.0.3", "203.0.113.9")).toBe("127.0.0.3")
    expect(resolveForwardedProto(trusted, "127.0.0.1", "https")).toBeUndefined()
    expect(resolveForwardedProto(undefined, "127.0.0.3", "https")).toBeUndefined()
    expect(resolveForwardedProto(trusted, "127.0.0.3", "HTTPS")).toBe("https")
    expect(resolveForwardedProto(trusted, "127.0.0.3", "gopher")).toBeUndefined()
  })

  it("walks X-Forwarded-For from the right: the first untrusted hop is the client, whatever the client prepended", () => {
    const trusted = list("10.0.0.0/8")
    // The client forged "1.1.1.1"; the edge proxy 10.0.0.5 appended the address it saw.
    expect(resolveClientAddress(trusted, "10.0.0.9", "1.1.1.1, 198.51.100.7, 10.0.0.5")).toBe("198.51.100.7")
    expect(resolveClientAddress(trusted, "10.0.0.9", ["1.1.1.1", "198.51.100.7"])).toBe("198.51.100.7")
    // Every hop trusted: the leftmost.
    expect(resolveClientAddress(trusted, "10.0.0.9", "10.0.0.7, 10.0.0.5")).toBe("10.0.0.7")
    // A malformed hop stops the walk at the last trusted address.
    expect(resolveClientAddress(trusted, "10.0.0.9", "198.51.100.7, junk")).toBe("10.0.0.9")
    // No header: the peer.
    expect(resolveClientAddress(trusted, "10.0.0.9", undefined)).toBe("10.0.0.9")
  })

  it("IPv4-mapped IPv6 peers and hops read as IPv4", () => {
    const trusted = list("127.0.0.1")
    expect(resolveClientAddress(trusted, "::ffff:127.0.0.1", "::ffff:198.51.100.7")).toBe("198.51.100.7")
    expect(resolveClientAddress(undefined, "::ffff:127.0.0.1", undefined)).toBe("127.0.0.1")
  })
})
