import { createHmac, timingSafeEqual } from "node:crypto"

/** Lowercase hex HMAC-SHA256(key = organization secret, data = organization UUID text). */
export const apiKeyDigest = (secret: string, orgUuid: string): string =>
  createHmac("sha256", secret).update(orgUuid).digest("hex")

/** The ready-to-use `Authorization` header value. */
export const formatApiKey = (orgUuid: string, secret: string): string =>
  `ApiKey ${orgUuid}:${apiKeyDigest(secret, orgUuid)}`

/** RFC 9110 §11.1: the scheme is case-insensitive (`apikey` is `ApiKey`), then one or more spaces. */
const SCHEME = /^apikey +/i
const CREDENTIAL = /^([0-9a-fA-F-]{36}):([0-9a-f]{64})$/

/** Whether an `Authorization` value is of the `ApiKey` scheme, whatever follows. */
export const isApiKeyScheme = (header: string): boolean => SCHEME.test(header.trim())

/** Splits an `ApiKey <uuid>:<hex>` header value; undefined when it is not of that shape. */
export const parseApiKey = (header: string): { readonly orgUuid: string; readonly digest: string } | undefined => {
  const trimmed = header.trim()
  const scheme = SCHEME.exec(trimmed)
  const match = scheme === null ? null : CREDENTIAL.exec(trimmed.slice(scheme[0].length))
  return match === null ? undefined : { orgUuid: match[1]!.toLowerCase(), digest: match[2]! }
}

/** Constant-time comparison of a presented digest with the expected one. */
export const digestMatches = (presented: string, expected: string): boolean => {
  const a = Buffer.from(presented, "utf8")
  const b = Buffer.from(expected, "utf8")
  return a.length === b.length && timingSafeEqual(a, b)
}
