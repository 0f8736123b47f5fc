import type { HttpServerRequest } from "effect/http"

/**
 * `host[:port]` as RFC 3986 lets a Host header carry it, narrowed to DNS names and IPv4 (letters,
 * digits, hyphens, dots) or a bracketed IPv6 address, and a port of digits. Anything else (a quote,
 * a space, a slash, userinfo such as `a@b`) could break a quoted header value or point an address
 * the service hands out somewhere else, so it is never echoed.
 */
const VALID_HOST =
  /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?$/i
const MAX_HOST_LENGTH = 261

/**
 * The request's Host when it is a valid `host[:port]`, else undefined: the caller then names its
 * own configured or listening address. Shared by every service that builds an absolute URL from
 * the request (the MCP discovery document and challenge, the site's `verification_uri`).
 */
export const echoableHost = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const host = request.headers.host
  return host !== undefined && host.length <= MAX_HOST_LENGTH && VALID_HOST.test(host) ? host : undefined
}
