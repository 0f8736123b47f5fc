import { Config, Context, Effect, Option, Schema } from "effect"
import type { HttpServerRequest } from "effect/http"
import { BlockList, isIP } from "node:net"

/**
 * `VDB_TRUSTED_PROXIES`: the reverse proxies whose `X-Forwarded-For` and `X-Forwarded-Proto`
 * are believed (addresses or CIDRs, IPv4 or IPv6, separated by commas or spaces). Behind nginx
 * every TCP peer is nginx; without this the device limiter, the sign-in throttle, the approval
 * page and the usage log would all see nginx's address. A peer not on the list is the client,
 * whatever headers it sends.
 */
export class TrustedProxiesInvalid extends Schema.TaggedError<TrustedProxiesInvalid>()("TrustedProxiesInvalid", {
  entry: Schema.String
}) {
  override get message() {
    return `VDB_TRUSTED_PROXIES: "${this.entry}" is not an IPv4 or IPv6 address or CIDR (e.g. 127.0.0.1, 10.0.0.0/8, ::1)`
  }
}

/** IPv4-mapped IPv6 (`::ffff:10.0.0.1`, how a dual-stack socket reports an IPv4 peer) as IPv4. */
const unmapped = (address: string) =>
  address.toLowerCase().startsWith("::ffff:") && isIP(address.slice(7)) === 4
    ? address.slice(7)
    : address

const familyOf = (address: string): "ipv4" | "ipv6" | undefined => {
  const version = isIP(address)
  return version === 4 ? "ipv4" : version === 6 ? "ipv6" : undefined
}

/** The parsed list; `undefined` trusts no one (the default). */
export const parseTrustedProxies = (text: string): BlockList | undefined | TrustedProxiesInvalid => {
  const entries = text.split(/[\s,]+/).filter((entry) => entry.length > 0)
  if (entries.length === 0) return undefined
  const list = new BlockList()
  for (const entry of entries) {
    const slash = entry.indexOf("/")
    const address = unmapped(slash === -1 ? entry : entry.slice(0, slash))
    const family = familyOf(address)
    if (family === undefined) return new TrustedProxiesInvalid({ entry })
    if (slash === -1) {
      list.addAddress(address, family)
      continue
    }
    const prefixText = entry.slice(slash + 1)
    const prefix = Number(prefixText)
    if (!/^\d{1,3}$/.test(prefixText) || prefix > (family === "ipv4" ? 32 : 128)) {
      return new TrustedProxiesInvalid({ entry })
    }
    list.addSubnet(address, prefix, family)
  }
  return list
}

/** Read once at start: a malformed entry refuses to start, naming it. */
export const loadTrustedProxies = Effect.gen(function*() {
  const parsed = parseTrustedProxies(yield* Config.String("VDB_TRUSTED_PROXIES").pipe(Config.withDefault("")))
  return parsed instanceof TrustedProxiesInvalid ? yield* parsed : parsed
})

/** The list `bin/vdb serve` read at start; by default no proxy is trusted. */
export class TrustedProxies extends Context.Reference<BlockList | undefined>("vdb/server/TrustedProxies", {
  defaultValue: () => undefined
}) {}

const isTrusted = (list: BlockList, address: string) => {
  const family = familyOf(address)
  return family !== undefined && list.check(address, family)
}

const headerValues = (value: string | ReadonlyArray<string> | undefined): Array<string> =>
  value === undefined ? [] : (typeof value === "string" ? [value] : [...value]).flatMap((v) => v.split(","))

/**
 * The client's address: the TCP peer, unless the peer is a trusted proxy; then `X-Forwarded-For`
 * walked from the right (each proxy appends the address it saw), skipping trusted hops, and the
 * first untrusted hop is the client. A client can prepend anything to the header, so the walk
 * never goes left of an untrusted hop; a malformed hop stops it at the last trusted one.
 */
export const resolveClientAddress = (
  list: BlockList | undefined,
  peer: string | undefined,
  forwardedFor: string | ReadonlyArray<string> | undefined
): string | undefined => {
  if (peer === undefined) return undefined
  let current = unmapped(peer)
  if (list === undefined) return current
  const hops = headerValues(forwardedFor).map((hop) => hop.trim())
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!isTrusted(list, current)) break
    const hop = unmapped(hops[i]!)
    if (familyOf(hop) === undefined) break
    current = hop
  }
  return current
}

/** `X-Forwarded-Proto` from a trusted peer (`http` or `https`), else undefined: the connection's own. */
export const resolveForwardedProto = (
  list: BlockList | undefined,
  peer: string | undefined,
  forwardedProto: string | ReadonlyArray<string> | undefined
): "http" | "https" | undefined => {
  if (list === undefined || peer === undefined || !isTrusted(list, unmapped(peer))) return undefined
  const first = headerValues(forwardedProto)[0]?.trim().toLowerCase()
  return first === "https" || first === "http" ? first : undefined
}

/** The client's address for a request, as every limiter, page and log records it. */
export const clientAddressOf = (
  list: BlockList | undefined,
  request: HttpServerRequest.HttpServerRequest
): string | null =>
  resolveClientAddress(list, Option.getOrUndefined(request.remoteAddress), request.headers["x-forwarded-for"]) ?? null

/** `clientAddressOf` with the list in the fiber's context. */
export const clientAddress = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<string | null> =>
  TrustedProxies.useSync((list) => clientAddressOf(list, request))

/** The scheme the client used: a trusted proxy's `X-Forwarded-Proto`, else `http` (vdb serves no TLS itself). */
export const requestScheme = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<"http" | "https"> =>
  TrustedProxies.useSync((list) =>
    resolveForwardedProto(list, Option.getOrUndefined(request.remoteAddress), request.headers["x-forwarded-proto"]) ??
      "http"
  )
