import { Config, Option, Schema } from "effect"
import type { HttpServerRequest } from "effect/http"
import type { BlockList } from "node:net"
import { Host, ServicePorts, urlHostOf } from "../config/AppConfig.ts"
import { resolveForwardedProto } from "../server/ClientAddress.ts"
import { echoableHost } from "../server/HostHeader.ts"

export const MCP_PATH = "/mcp"
export const DISCOVERY_PATH = "/.well-known/oauth-protected-resource"

/** The 401 challenge: the scheme, and (RFC 9728 section 5.1) where the resource metadata lives. */
export const challengeFor = (origin: string) => `ApiKey realm="vdb-mcp", resource_metadata="${origin}${DISCOVERY_PATH}"`

/** Why a `VDB_MCP_URL` is not a public origin (`https://mcp.example` or `http://host:port`), or true. */
export const publicOriginProblem = (value: string): true | string => {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return "not a URL; expected an origin such as https://mcp.example"
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return "an http or https origin is expected, such as https://mcp.example"
  }
  if (url.username !== "" || url.password !== "" || url.pathname !== "/" || url.search !== "" || url.hash !== "") {
    return "an origin only is expected (scheme, host and port), without a path, query or credentials"
  }
  return true
}

/**
 * `VDB_MCP_URL`: the MCP service's public origin, for a service behind a TLS proxy or under another
 * name (`https://mcp.example`). RFC 9728 clients check that the discovery document's `resource`
 * is the URL they used, so it must say `https` there. Unset: `http://` and the request's Host.
 */
const PublicOrigin = Config.option(
  Config.schema(Schema.String.check(Schema.makeFilter(publicOriginProblem)), "VDB_MCP_URL")
).pipe(Config.map(Option.map((value) => new URL(value).origin)))

export interface ServiceAddress {
  /** `host:port` of the MCP service itself (VDB_HOST, VDB_MCP_PORT); a wildcard listen address is named as loopback. */
  readonly own: string
  /** `VDB_MCP_URL`'s origin, when set. */
  readonly publicOrigin: string | undefined
}

/** Where the MCP service is: what its answers name. */
export const ServiceHost: Config.Config<ServiceAddress> = Config.all({
  host: Host,
  ports: ServicePorts,
  publicOrigin: PublicOrigin
})
  .pipe(Config.map(({ host, ports, publicOrigin }) => ({
    own: `${urlHostOf(host)}:${ports.mcp}`,
    publicOrigin: Option.getOrUndefined(publicOrigin)
  })))

/**
 * The origin a response names: `VDB_MCP_URL` when set; else the scheme (`https` when a trusted
 * proxy's `X-Forwarded-Proto` says so, `trusted` being `VDB_TRUSTED_PROXIES`) and the request's Host
 * when it is a valid `host[:port]`, otherwise the service's own address. `shared`: the same for any
 * request with that Host, so a shared cache may keep it (`vary: host`); an answer that followed a
 * forwarded scheme is not.
 */
export const originOf = (
  request: HttpServerRequest.HttpServerRequest,
  service: ServiceAddress,
  trusted: BlockList | undefined
) => {
  if (service.publicOrigin !== undefined) return { origin: service.publicOrigin, shared: true }
  const host = echoableHost(request)
  const forwarded = resolveForwardedProto(
    trusted,
    Option.getOrUndefined(request.remoteAddress),
    request.headers["x-forwarded-proto"]
  )
  return {
    origin: `${forwarded ?? "http"}://${host ?? service.own}`,
    shared: host !== undefined && forwarded === undefined
  }
}
