import { Redacted } from "effect"
import type { Provider } from "../../providers/ProviderCatalog.ts"

type HeaderRecord = Record<string, string | ReadonlyArray<string> | undefined>

/** RFC 7230 §6.1 hop-by-hop headers (plus the common non-standard ones). */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade"
])

/**
 * Never forwarded upstream: the service credential, `accept-encoding` (the
 * gateway must be able to read the response), and what describes the
 * client's connection to the gateway rather than the request (`host`,
 * `content-length`, `expect`: the body is already read and may be rewritten).
 */
const CLIENT_ONLY = new Set(["authorization", "x-api-key", "accept-encoding", "host", "content-length", "expect"])

const isGatewayHeader = (name: string): boolean => name.length >= 10 && name.startsWith("x-gateway-")

const CLOSE: ReadonlySet<string> = new Set(["close"])

/** Header names listed in `Connection`, which are hop-by-hop for this message. */
const connectionNamed = (headers: HeaderRecord): ReadonlySet<string> | undefined => {
  const value = headers["connection"]
  if (value === undefined) return undefined
  // The common values, without parsing per request: `keep-alive` names only a header dropped anyway.
  if (value === "keep-alive") return undefined
  if (value === "close") return CLOSE
  const list = typeof value === "string" ? value : value.join(",")
  const names = new Set<string>()
  for (const part of list.split(",")) {
    const name = part.trim().toLowerCase()
    if (name !== "") names.add(name)
  }
  return names
}

/** Client headers (lower-case names, as Node gives them) to send upstream, with the provider key injected. */
export const upstreamRequestHeaders = (
  incoming: HeaderRecord,
  provider: Provider,
  providerKey: Redacted.Redacted<string>
): Record<string, string | Array<string>> => {
  const named = connectionNamed(incoming)
  const out: Record<string, string | Array<string>> = {}
  for (const name in incoming) {
    const value = incoming[name]
    if (
      value === undefined || CLIENT_ONLY.has(name) || HOP_BY_HOP.has(name) || isGatewayHeader(name) ||
      (named !== undefined && named.has(name))
    ) continue
    out[name] = typeof value === "string" ? value : [...value]
  }
  const auth = provider.spec.auth
  if (auth._tag === "Bearer") out["authorization"] = `Bearer ${Redacted.value(providerKey)}`
  else out[auth.name] = Redacted.value(providerKey)
  const defaults = provider.spec.defaultHeaders
  for (const name in defaults) {
    if (out[name] === undefined) out[name] = defaults[name]!
  }
  return out
}

/**
 * Provider response headers relayed to the client: hop-by-hop and
 * `X-Gateway-*` dropped; `content-length` dropped when the gateway sets its own;
 * `set-cookie` dropped (a provider's cookies are scoped to its own domain and
 * mean nothing behind the gateway).
 */
export const clientResponseHeaders = (
  upstream: HeaderRecord,
  keepContentLength: boolean
): Record<string, string> => {
  const named = connectionNamed(upstream)
  const out: Record<string, string> = {}
  for (const name in upstream) {
    const value = upstream[name]
    if (
      value === undefined || HOP_BY_HOP.has(name) || isGatewayHeader(name) ||
      name === "set-cookie" || (!keepContentLength && name === "content-length") ||
      (named !== undefined && named.has(name))
    ) continue
    out[name] = typeof value === "string" ? value : value.join(", ")
  }
  return out
}
