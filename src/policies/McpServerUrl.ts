/**
 * MCP server URLs as the MCP policy compares them (issue 32 §5): two
 * spellings a client or provider reads as the same server compare equal.
 * The WHATWG URL parser does most of it (scheme and host in lower case, IDNA,
 * percent-decoding and IPv4 forms in the host, the default port dropped, dot
 * segments resolved, `\` read as `/`); on top of it the host loses a trailing
 * dot, the path its trailing slashes and its needless percent-encoding, and
 * user information, query and fragment are not part of the server's address.
 */

/** Whether a policy value is meant as a URL rather than a server name: it starts with a scheme and `//`. */
export const looksLikeUrl = (value: string): boolean => /^\s*[a-z][a-z0-9+.-]*:\/\//i.test(value)

const UNRESERVED = /[A-Za-z0-9\-._~]/

/** `%6D` → `m` for unreserved characters (RFC 3986 §6.2.2.2); every other escape in upper case. */
const decodeUnreserved = (path: string): string =>
  path.replace(/%([0-9a-fA-F]{2})/g, (escape, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16))
    return UNRESERVED.test(char) ? char : escape.toUpperCase()
  })

/**
 * The comparable form of an MCP server URL, `scheme://host[:port]/path` with
 * no trailing slash; undefined when it is not an http or https URL the parser
 * accepts (the caller refuses it: a URL the gateway can't read could be any
 * server).
 */
export const canonicalMcpUrl = (raw: string): string | undefined => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return undefined
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return undefined
  const host = url.hostname.replace(/\.+$/, "")
  if (host === "") return undefined
  const path = decodeUnreserved(url.pathname).replace(/\/+$/, "")
  return `${url.protocol}//${host}${url.port === "" ? "" : `:${url.port}`}${path}`
}

/**
 * A policy entry's value for the `mcp` kind: a URL in its canonical form,
 * anything else (a server name) as written. A URL-shaped value that does not
 * parse is kept as written, so it matches nothing a request can send as a URL.
 */
export const canonicalMcpEntry = (value: string): string =>
  looksLikeUrl(value) ? canonicalMcpUrl(value.trim()) ?? value : value
