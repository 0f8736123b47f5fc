/**
 * Which addresses a custom provider may be reached at. Pure functions: every
 * textual notation of an address is parsed to its bytes first (so `127.1`,
 * `0x7f000001`, `2130706433`, `0177.0.0.1`, `[::ffff:7f00:1]` are all the
 * loopback address), then the bytes are classified. Anything that cannot be
 * parsed is refused: a resolver answer we do not understand is never dialled.
 */

/** An address as bytes: 4 for IPv4, 16 for IPv6. */
export interface ParsedAddress {
  readonly family: 4 | 6
  readonly bytes: Uint8Array
  /** The canonical text to dial (`127.0.0.1`, `2001:db8::1` without brackets or zone). */
  readonly text: string
}

const V4_PART = /^(?:0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*)$/

const v4Part = (part: string): number | undefined => {
  if (!V4_PART.test(part)) return undefined
  if (part.length >= 2 && (part[1] === "x" || part[1] === "X")) {
    return part.length === 2
      ? 0
      : parseInt(part.slice(2), 16)
  }
  if (part.length >= 2 && part[0] === "0") return parseInt(part.slice(1), 8)
  return Number(part)
}

/**
 * IPv4 as `inet_aton` and the WHATWG URL parser read it: one to four parts,
 * each decimal, octal (leading 0) or hex (0x); the last part fills the
 * remaining bytes (`127.1`, `2130706433`); one trailing dot is ignored.
 */
export const parseIpv4 = (text: string): Uint8Array | undefined => {
  const parts = text.split(".")
  if (parts.length > 1 && parts[parts.length - 1] === "") parts.pop()
  if (parts.length === 0 || parts.length > 4) return undefined
  const values: Array<number> = []
  for (const part of parts) {
    const value = v4Part(part)
    if (value === undefined || !Number.isFinite(value)) return undefined
    values.push(value)
  }
  const last = values.pop()!
  if (values.some((value) => value > 255) || last >= 256 ** (4 - values.length)) return undefined
  let n = last
  for (let i = 0; i < values.length; i++) n += values[i]! * 256 ** (3 - i)
  return new Uint8Array([n >>> 24 & 255, n >>> 16 & 255, n >>> 8 & 255, n & 255])
}

const DOTTED_QUAD =
  /^(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$/
const HEXTET = /^[0-9a-fA-F]{1,4}$/

/** IPv6 text, brackets and a zone id (`%eth0`, `%25eth0`) allowed; an embedded dotted quad in the last 32 bits. */
export const parseIpv6 = (input: string): Uint8Array | undefined => {
  let text = input.startsWith("[") && input.endsWith("]") ? input.slice(1, -1) : input
  const zone = text.indexOf("%")
  if (zone !== -1) text = text.slice(0, zone)
  if (!text.includes(":")) return undefined
  const words: Array<number> = []
  const halves = text.split("::")
  if (halves.length > 2) return undefined
  const parseHalf = (half: string, isLast: boolean): Array<number> | undefined => {
    if (half === "") return []
    const out: Array<number> = []
    const pieces = half.split(":")
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!
      if (isLast && i === pieces.length - 1 && piece.includes(".")) {
        if (!DOTTED_QUAD.test(piece)) return undefined
        const [a, b, c, d] = piece.split(".").map(Number) as [number, number, number, number]
        out.push(a << 8 | b, c << 8 | d)
      } else if (HEXTET.test(piece)) {
        out.push(parseInt(piece, 16))
      } else {
        return undefined
      }
    }
    return out
  }
  const head = parseHalf(halves[0]!, halves.length === 1)
  const tail = halves.length === 2 ? parseHalf(halves[1]!, true) : []
  if (head === undefined || tail === undefined) return undefined
  if (halves.length === 1) {
    if (head.length !== 8) return undefined
    words.push(...head)
  } else {
    const missing = 8 - head.length - tail.length
    if (missing < 1) return undefined
    words.push(...head, ...new Array<number>(missing).fill(0), ...tail)
  }
  const bytes = new Uint8Array(16)
  words.forEach((word, i) => {
    bytes[2 * i] = word >> 8
    bytes[2 * i + 1] = word & 255
  })
  return bytes
}

const v4Text = (bytes: Uint8Array) => `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`

const v6Text = (bytes: Uint8Array): string => {
  const words: Array<string> = []
  for (let i = 0; i < 16; i += 2) words.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16))
  // Longest run of zero words (length >= 2) becomes `::`.
  let best = -1
  let bestLength = 1
  for (let i = 0; i < 8;) {
    if (words[i] !== "0") {
      i++
      continue
    }
    let j = i
    while (j < 8 && words[j] === "0") j++
    if (j - i > bestLength) {
      best = i
      bestLength = j - i
    }
    i = j
  }
  if (best === -1) return words.join(":")
  return `${words.slice(0, best).join(":")}::${words.slice(best + bestLength).join(":")}`
}

/**
 * An address literal in any notation, or `undefined` for a name. A host with
 * a colon is IPv6 or nothing; otherwise every all-numeric dotted form is IPv4
 * (as a browser or `inet_aton` would read it, so nothing reads it differently).
 */
export const parseAddress = (host: string): ParsedAddress | undefined => {
  if (host.includes(":") || host.startsWith("[")) {
    const bytes = parseIpv6(host)
    return bytes === undefined ? undefined : { family: 6, bytes, text: v6Text(bytes) }
  }
  const bytes = parseIpv4(host)
  return bytes === undefined ? undefined : { family: 4, bytes, text: v4Text(bytes) }
}

/**
 * A host that is not a name: a numeric-looking host that is also not a valid
 * address (`999.1.1.1`, `0x`, `1.2.3.4.5`) must not be sent to a resolver,
 * which might read it its own way.
 */
export const looksNumeric = (host: string): boolean => {
  const trimmed = host.endsWith(".") ? host.slice(0, -1) : host
  const last = trimmed.split(".").at(-1) ?? ""
  return host.includes(":") || host.startsWith("[") || /^(?:0[xX][0-9a-fA-F]*|[0-9]+)$/.test(last)
}

interface Range {
  readonly prefix: Uint8Array
  readonly bits: number
  readonly reason: string
}

const v4Range = (cidr: string, reason: string): Range => {
  const [address, bits] = cidr.split("/") as [string, string]
  return { prefix: parseIpv4(address)!, bits: Number(bits), reason }
}

const v6Range = (cidr: string, reason: string): Range => {
  const [address, bits] = cidr.split("/") as [string, string]
  return { prefix: parseIpv6(address)!, bits: Number(bits), reason }
}

const within = (bytes: Uint8Array, range: Range): boolean => {
  let bits = range.bits
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 255 : (0xff << (8 - bits)) & 255
    if ((bytes[i]! & mask) !== (range.prefix[i]! & mask)) return false
  }
  return true
}

/** IANA special-purpose IPv4 ranges that are not globally reachable (RFC 6890 and successors). */
const V4_RESERVED: ReadonlyArray<Range> = [
  v4Range("0.0.0.0/8", "unspecified or this-network"),
  v4Range("10.0.0.0/8", "private (RFC 1918)"),
  v4Range("100.64.0.0/10", "shared address space (CGNAT)"),
  v4Range("127.0.0.0/8", "loopback"),
  v4Range("169.254.0.0/16", "link-local"),
  v4Range("172.16.0.0/12", "private (RFC 1918)"),
  v4Range("192.0.0.0/24", "IETF protocol assignments"),
  v4Range("192.0.2.0/24", "documentation"),
  v4Range("192.88.99.0/24", "6to4 relay anycast"),
  v4Range("192.168.0.0/16", "private (RFC 1918)"),
  v4Range("198.18.0.0/15", "benchmarking"),
  v4Range("198.51.100.0/24", "documentation"),
  v4Range("203.0.113.0/24", "documentation"),
  v4Range("224.0.0.0/4", "multicast"),
  v4Range("255.255.255.255/32", "broadcast"),
  v4Range("240.0.0.0/4", "reserved (240/4)")
]

const V6_RESERVED: ReadonlyArray<Range> = [
  v6Range("::/128", "unspecified"),
  v6Range("::1/128", "loopback"),
  v6Range("64:ff9b:1::/48", "local-use NAT64"),
  v6Range("100::/64", "discard-only"),
  v6Range("2001::/23", "IETF protocol assignments (Teredo, benchmarking, ORCHID)"),
  v6Range("2001:db8::/32", "documentation"),
  v6Range("3fff::/20", "documentation"),
  v6Range("fc00::/7", "unique-local"),
  v6Range("fec0::/10", "site-local"),
  v6Range("fe80::/10", "link-local"),
  v6Range("ff00::/8", "multicast")
]

const MAPPED = v6Range("::ffff:0:0/96", "IPv4-mapped")
const COMPATIBLE = v6Range("::/96", "IPv4-compatible")
const NAT64 = v6Range("64:ff9b::/96", "NAT64")
const SIX_TO_FOUR = v6Range("2002::/16", "6to4")
const GLOBAL_UNICAST = v6Range("2000::/3", "global unicast")

const classifyV4 = (bytes: Uint8Array): string | undefined => {
  for (const range of V4_RESERVED) if (within(bytes, range)) return range.reason
  return undefined
}

/** What makes an address non-public, or `undefined` for a public one. */
export const reservedReason = (address: ParsedAddress): string | undefined => {
  const bytes = address.bytes
  if (address.family === 4) return classifyV4(bytes)
  for (const range of V6_RESERVED) if (within(bytes, range)) return range.reason
  // IPv6 forms that carry an IPv4 address are as public as that address.
  for (const [range, offset] of [[MAPPED, 12], [NAT64, 12], [SIX_TO_FOUR, 2]] as const) {
    if (within(bytes, range)) {
      const inner = classifyV4(bytes.subarray(offset, offset + 4))
      return inner === undefined ? undefined : `${range.reason} ${inner}`
    }
  }
  // Deprecated (RFC 4291) and never a real destination.
  if (within(bytes, COMPATIBLE)) return "IPv4-compatible (deprecated)"
  if (!within(bytes, GLOBAL_UNICAST)) return "not global unicast"
  return undefined
}

/** The verdict on one textual address (a resolver answer or a literal host): unparseable counts as reserved. */
export const vetAddress = (text: string): { readonly address: ParsedAddress } | { readonly refused: string } => {
  // A zone id only means something for link-local and loopback scopes, which are refused anyway.
  if (text.includes("%")) return { refused: "scoped address (zone id)" }
  const address = parseAddress(text)
  if (address === undefined) return { refused: "not an address" }
  const reason = reservedReason(address)
  return reason === undefined ? { address } : { refused: reason }
}
