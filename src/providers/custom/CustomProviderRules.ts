import type { AuthStyle } from "../catalog/ProviderSpec.ts"
import { isProviderSlug } from "../ProviderSlugs.ts"
import { CustomProviderInvalid, type CustomSurface, type NewCustomProvider } from "./CustomProvider.ts"
import type { CustomProviderInput } from "./CustomProviderStore.ts"

/**
 * What a registration must satisfy before its address is even looked at:
 * the shape of the slug, URL, auth style and default headers. Pure, so the
 * management API, the admin socket and the tests share one set of messages.
 */

export const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/

/** First path segments the gateway serves itself: a custom slug there could never be reached. */
const RESERVED_SLUGS: ReadonlySet<string> = new Set(["healthz", "readyz", "manage", "v1", "openapi"])

const TOKEN = /^[a-z0-9!#$%&'*+.^_`|~-]{1,64}$/

/**
 * Never set from a registration: what describes the connection (the gateway
 * sets it), what carries a credential (the key belongs in the vault), and the
 * gateway's own headers.
 */
const FORBIDDEN_HEADERS: ReadonlySet<string> = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "proxy-connection",
  "te",
  "trailer",
  "upgrade",
  "expect",
  "accept-encoding",
  "authorization",
  "proxy-authorization",
  "x-api-key",
  "cookie"
])

const MAX_DEFAULT_HEADERS = 32
const MAX_HEADER_VALUE = 1024
const MAX_URL = 2048
// Visible ASCII and spaces: no control characters (no header injection).
const HEADER_VALUE = /^[\x20-\x7e]*$/

const invalid = (reason: string) => new CustomProviderInvalid({ reason })

export const slugProblem = (slug: string): string | undefined => {
  if (!SLUG.test(slug)) {
    return `slug ${JSON.stringify(slug.slice(0, 80))}: use 1-63 lower-case letters, digits and dashes`
  }
  if (isProviderSlug(slug)) return `slug ${JSON.stringify(slug)} is a built-in provider`
  if (RESERVED_SLUGS.has(slug)) return `slug ${JSON.stringify(slug)} is reserved by the gateway`
  return undefined
}

/** `bearer`, `x-api-key` or `header:<name>` as the catalog's `AuthStyle`. */
export const parseAuth = (auth: string): AuthStyle | undefined => {
  if (auth === "bearer") return { _tag: "Bearer" }
  if (auth === "x-api-key") return { _tag: "Header", name: "x-api-key" }
  if (!auth.startsWith("header:")) return undefined
  const name = auth.slice("header:".length).toLowerCase()
  if (!TOKEN.test(name) || name.startsWith("x-gateway-")) return undefined
  // `Authorization` carries the key as `header:authorization` would (raw, no "Bearer"); the rest are connection headers.
  if (FORBIDDEN_HEADERS.has(name) && name !== "authorization" && name !== "x-api-key") return undefined
  return { _tag: "Header", name }
}

const canonicalAuth = (style: AuthStyle) =>
  style._tag === "Bearer" ? "bearer" : style.name === "x-api-key" ? "x-api-key" : `header:${style.name}`

/** The base URL as stored: https, no credentials, query or fragment, no trailing slash. */
export const parseBaseUrl = (raw: string): URL | string => {
  if (raw.length > MAX_URL) return `base_url is longer than ${MAX_URL} characters`
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return "base_url is not a URL"
  }
  if (url.protocol !== "https:") return "base_url must be https"
  if (url.username !== "" || url.password !== "") {
    return "base_url must not carry credentials (store the key with provider-key set)"
  }
  if (url.search !== "" || url.hash !== "") return "base_url must not have a query or fragment"
  if (url.hostname === "") return "base_url has no host"
  return url
}

export const canonicalBaseUrl = (url: URL) => `${url.origin}${url.pathname.replace(/\/+$/, "")}`

/** Everything but the address check: a refusal, or the row to store (with the parsed URL to vet). */
export const validateRegistration = (
  input: NewCustomProvider
): CustomProviderInvalid | { readonly row: CustomProviderInput; readonly url: URL } => {
  const slug = slugProblem(input.slug)
  if (slug !== undefined) return invalid(slug)
  const url = parseBaseUrl(input.base_url)
  if (typeof url === "string") return invalid(url)
  if (input.surfaces.length === 0) return invalid("name at least one surface (chat, responses, messages)")
  if ((input.surfaces as ReadonlyArray<string>).includes("kiro")) {
    return invalid("a custom provider cannot serve the kiro surface")
  }
  const surfaces = [...new Set(input.surfaces)] as Array<CustomSurface>
  const auth = parseAuth(input.auth ?? "bearer")
  if (auth === undefined) {
    return invalid(`auth ${JSON.stringify((input.auth ?? "").slice(0, 80))}: use bearer, x-api-key or header:<name>`)
  }
  const headers = input.default_headers ?? {}
  const names = Object.keys(headers)
  if (names.length > MAX_DEFAULT_HEADERS) return invalid(`at most ${MAX_DEFAULT_HEADERS} default headers`)
  const defaultHeaders: Record<string, string> = {}
  for (const raw of names) {
    const name = raw.toLowerCase()
    const value = headers[raw]!
    if (!TOKEN.test(name)) return invalid(`default header ${JSON.stringify(raw.slice(0, 80))}: not a header name`)
    if (
      FORBIDDEN_HEADERS.has(name) || name.startsWith("x-gateway-") || (auth._tag === "Header" && auth.name === name)
    ) {
      return invalid(`default header ${name}: not allowed (keys go in the vault; connection headers are the gateway's)`)
    }
    if (value.length > MAX_HEADER_VALUE || !HEADER_VALUE.test(value)) {
      return invalid(
        `default header ${name}: the value must be printable ASCII, at most ${MAX_HEADER_VALUE} characters`
      )
    }
    // Header names are case-insensitive: two spellings of one name kept only the last, silently.
    if (name in defaultHeaders) return invalid(`default header ${name}: given twice (names are case-insensitive)`)
    defaultHeaders[name] = value
  }
  return {
    url,
    row: { slug: input.slug, baseUrl: canonicalBaseUrl(url), surfaces, auth: canonicalAuth(auth), defaultHeaders }
  }
}
