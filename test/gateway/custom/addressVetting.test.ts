import { describe, expect, it } from "vitest"
import { looksNumeric, parseAddress, vetAddress } from "../../../src/providers/custom/AddressVetting.ts"

const refused = (text: string) => {
  const verdict = vetAddress(text)
  return "refused" in verdict ? verdict.refused : undefined
}

describe("address literals in every notation", () => {
  it.each([
    ["127.0.0.1", "127.0.0.1"],
    ["2130706433", "127.0.0.1"],
    ["0177.0.0.1", "127.0.0.1"],
    ["0x7f000001", "127.0.0.1"],
    ["0x7F.0.0.1", "127.0.0.1"],
    ["127.1", "127.0.0.1"],
    ["127.0.1", "127.0.0.1"],
    ["127.0.0.1.", "127.0.0.1"],
    ["0", "0.0.0.0"],
    ["0x0a.0x00.0x00.0x01", "10.0.0.1"],
    ["012.1", "10.0.0.1"],
    ["169.254.43518", "169.254.169.254"],
    ["0xa9fea9fe", "169.254.169.254"],
    ["::1", "::1"],
    ["[::1]", "::1"],
    ["[::ffff:127.0.0.1]", "::ffff:7f00:1"],
    ["[::ffff:7f00:1]", "::ffff:7f00:1"],
    ["0:0:0:0:0:0:0:1", "::1"],
    ["fe80::1%eth0", "fe80::1"],
    ["[fe80::1%25eth0]", "fe80::1"],
    ["2001:DB8::1", "2001:db8::1"],
    ["64:ff9b::10.0.0.1", "64:ff9b::a00:1"]
  ])("%s is %s", (text, canonical) => {
    expect(parseAddress(text)?.text).toBe(canonical)
  })

  it.each([
    "256.0.0.1",
    "1.2.3.4.5",
    "08.0.0.1",
    "0x1g",
    "1..2",
    "::1::",
    "1:2:3:4:5:6:7:8:9",
    "[::1",
    "12345::",
    "::ffff:127.1"
  ])(
    "%s is not an address",
    (text) => {
      expect(parseAddress(text)).toBeUndefined()
      expect(refused(text)).toBeDefined()
    }
  )

  it("tells names from numeric-looking hosts a resolver must never see", () => {
    expect(looksNumeric("api.example.com")).toBe(false)
    expect(looksNumeric("localhost.")).toBe(false)
    expect(looksNumeric("1.2.3.4.5")).toBe(true)
    expect(looksNumeric("999.1.1.1")).toBe(true)
    expect(looksNumeric("example.0x10")).toBe(true)
  })
})

describe("reserved ranges", () => {
  it.each([
    ["0.1.2.3", "this-network"],
    ["10.1.2.3", "private"],
    ["100.64.0.1", "CGNAT"],
    ["100.127.255.255", "CGNAT"],
    ["127.255.0.1", "loopback"],
    ["169.254.169.254", "link-local"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.0.0.8", "IETF"],
    ["192.0.2.10", "documentation"],
    ["192.168.1.1", "private"],
    ["198.18.0.1", "benchmarking"],
    ["198.19.255.255", "benchmarking"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.9", "documentation"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "broadcast"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["fe80::1", "link-local"],
    ["febf::1", "link-local"],
    ["fec0::1", "site-local"],
    ["fc00::1", "unique-local"],
    ["fd12:3456::1", "unique-local"],
    ["ff02::1", "multicast"],
    ["2001:db8::1", "documentation"],
    ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
    ["::ffff:a00:1", "IPv4-mapped private"],
    ["::127.0.0.1", "IPv4-compatible"],
    ["::8.8.8.8", "IPv4-compatible"],
    ["64:ff9b::127.0.0.1", "NAT64 loopback"],
    ["64:ff9b::a9fe:a9fe", "NAT64 link-local"],
    ["2002:7f00:1::", "6to4 loopback"],
    ["2002:c0a8:101::1", "6to4 private"],
    ["2001::1", "Teredo"],
    ["100::1", "discard"],
    ["4000::1", "not global unicast"]
  ])("%s is refused (%s)", (text, reason) => {
    expect(refused(text)).toContain(reason)
  })

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "100.63.255.255",
    "100.128.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "192.169.0.1",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "2606:4700::1111",
    "2a00:1450:4001::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1"
  ])(
    "%s is public",
    (text) => {
      expect(refused(text)).toBeUndefined()
    }
  )

  it("refuses any address carrying a zone id, even a global one", () => {
    expect(refused("fe80::1%eth0")).toBeDefined()
    expect(refused("2606:4700::1111%eth0")).toBeDefined()
  })
})
