import { createHash, createHmac } from "node:crypto"

/**
 * AWS Signature Version 4 with the hash as a parameter: SHA-256 is the AWS
 * scheme (and its test suite), SHA-512 is this service's `AWS4-HMAC-SHA512`.
 * Only the hash changes; canonicalisation and the string-to-sign layout are
 * exactly AWS's.
 */
export type SigV4Hash = "sha256" | "sha512"

export const algorithmOf = (hash: SigV4Hash): string => hash === "sha256" ? "AWS4-HMAC-SHA256" : "AWS4-HMAC-SHA512"

export interface SigV4Request {
  readonly method: string
  /** The path as sent, not yet percent-encoded for signing (e.g. `/example space/`). */
  readonly path: string
  /** The raw query string without `?` (its components are already URL-encoded). */
  readonly query: string
  /** Every header line in arrival order; duplicates allowed. */
  readonly headers: ReadonlyArray<readonly [string, string]>
  /** Lowercase hex digest of the body under the scheme's hash. */
  readonly payloadHash: string
}

export const hashHex = (hash: SigV4Hash, data: string | Uint8Array): string =>
  createHash(hash).update(data).digest("hex")

const hmac = (hash: SigV4Hash, key: string | Uint8Array, data: string): Buffer =>
  createHmac(hash, key).update(data, "utf8").digest()

/** RFC 3986 encoding of everything but the unreserved characters (and `/` when asked). */
export const uriEncode = (value: string, keepSlash = false): string => {
  let out = ""
  for (const byte of Buffer.from(value, "utf8")) {
    const c = String.fromCharCode(byte)
    if (/[A-Za-z0-9\-._~]/.test(c) || (keepSlash && c === "/")) out += c
    else out += "%" + byte.toString(16).toUpperCase().padStart(2, "0")
  }
  return out
}

const safeDecode = (value: string): string => {
  try {
    return decodeURIComponent(value.replace(/\+/g, "%20"))
  } catch {
    return value
  }
}

/** Removes `.`/`..` segments and repeated slashes, keeping a trailing slash. */
export const normalizePath = (path: string): string => {
  const out: Array<string> = []
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue
    if (segment === "..") out.pop()
    else out.push(segment)
  }
  const joined = "/" + out.join("/")
  return out.length > 0 && path.endsWith("/") ? joined + "/" : joined
}

export const canonicalUri = (path: string, normalize: boolean): string =>
  uriEncode(normalize ? normalizePath(path) : (path === "" ? "/" : path), true)

export const canonicalQuery = (query: string): string => {
  if (query === "") return ""
  const pairs = query.split("&").filter((p) => p !== "").map((pair) => {
    const eq = pair.indexOf("=")
    const key = eq === -1 ? pair : pair.slice(0, eq)
    const value = eq === -1 ? "" : pair.slice(eq + 1)
    return [uriEncode(safeDecode(key)), uriEncode(safeDecode(value))] as const
  })
  pairs.sort(([ka, va], [kb, vb]) => ka < kb ? -1 : ka > kb ? 1 : va < vb ? -1 : va > vb ? 1 : 0)
  return pairs.map(([k, v]) => `${k}=${v}`).join("&")
}

const trimValue = (value: string): string => value.trim().replace(/\s+/g, " ")

/** Canonical headers (lowercase names, trimmed values, duplicates comma-joined) over the signed set. */
export const canonicalHeaders = (
  headers: ReadonlyArray<readonly [string, string]>,
  signed: ReadonlyArray<string>
): string => {
  const byName = new Map<string, Array<string>>()
  for (const [name, value] of headers) {
    const key = name.toLowerCase()
    const list = byName.get(key) ?? []
    list.push(trimValue(value))
    byName.set(key, list)
  }
  return signed.map((name) => `${name}:${(byName.get(name) ?? []).join(",")}\n`).join("")
}

/** The sorted, lowercase signed-header names of a request (every header it carries). */
export const signedHeaderNames = (headers: ReadonlyArray<readonly [string, string]>): ReadonlyArray<string> =>
  [...new Set(headers.map(([name]) => name.toLowerCase()))].sort()

export const canonicalRequest = (
  request: SigV4Request,
  signedHeaders: ReadonlyArray<string>,
  options: { readonly normalize: boolean }
): string =>
  [
    request.method.toUpperCase(),
    canonicalUri(request.path, options.normalize),
    canonicalQuery(request.query),
    canonicalHeaders(request.headers, signedHeaders),
    signedHeaders.join(";"),
    request.payloadHash
  ].join("\n")

export interface SigV4Scope {
  /** `YYYYMMDD` */
  readonly date: string
  readonly region: string
  readonly service: string
}

export const scopeString = (scope: SigV4Scope): string => `${scope.date}/${scope.region}/${scope.service}/aws4_request`

export const stringToSign = (hash: SigV4Hash, amzDate: string, scope: SigV4Scope, canonical: string): string =>
  [algorithmOf(hash), amzDate, scopeString(scope), hashHex(hash, canonical)].join("\n")

export const signingKey = (hash: SigV4Hash, secret: string, scope: SigV4Scope): Buffer => {
  const kDate = hmac(hash, "AWS4" + secret, scope.date)
  const kRegion = hmac(hash, kDate, scope.region)
  const kService = hmac(hash, kRegion, scope.service)
  return hmac(hash, kService, "aws4_request")
}

export const signatureOf = (hash: SigV4Hash, secret: string, scope: SigV4Scope, toSign: string): string =>
  hmac(hash, signingKey(hash, secret, scope), toSign).toString("hex")

/** `Date` as `YYYYMMDDTHHMMSSZ`. */
export const formatAmzDate = (epochMillis: number): string =>
  new Date(epochMillis).toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "")

/** `YYYYMMDDTHHMMSSZ` to epoch milliseconds; undefined when malformed. */
export const parseAmzDate = (value: string): number | undefined => {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value)
  if (m === null) return undefined
  const millis = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!)
  return formatAmzDate(millis) === value ? millis : undefined
}
