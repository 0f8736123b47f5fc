import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"

/**
 * Nonce tokens: `<payload>.<tag>`, both base64url. The payload is the expiry
 * (48-bit seconds since the epoch) and 12 random bytes; the tag is
 * HMAC-SHA256 over organization and payload, truncated to 128 bits, keyed by
 * a key derived from the organization's own secret. Nothing is stored: any
 * replica holding the secret verifies, and a nonce never verifies for another
 * organization. Only the canonical base64url spelling of a tag verifies.
 */

const PAYLOAD_BYTES = 6 + 12
const TAG_BYTES = 16
const SHAPE = /^[A-Za-z0-9_-]{24}\.[A-Za-z0-9_-]{22}$/

export type NonceCheck = "valid" | "expired" | "unknown"

/** The per-organization nonce key, so the organization secret itself never signs anything else. */
export const nonceKey = (orgSecret: string): Buffer =>
  createHmac("sha256", orgSecret).update("vdb/gateway/nonce/v1").digest()

const tagOf = (key: Buffer, orgUuid: string, payload: string): Buffer =>
  createHmac("sha256", key).update(orgUuid).update(".").update(payload).digest().subarray(0, TAG_BYTES)

export const issueNonce = (key: Buffer, orgUuid: string, expiresAtMs: number): string => {
  const payload = Buffer.alloc(PAYLOAD_BYTES)
  payload.writeUIntBE(Math.floor(expiresAtMs / 1000), 0, 6)
  randomBytes(12).copy(payload, 6)
  const encoded = payload.toString("base64url")
  return `${encoded}.${tagOf(key, orgUuid, encoded).toString("base64url")}`
}

export const checkNonce = (key: Buffer, orgUuid: string, nonce: string, nowMs: number): NonceCheck => {
  if (!SHAPE.test(nonce)) return "unknown"
  const [encoded, tag] = nonce.split(".") as [string, string]
  const presented = Buffer.from(tag, "base64url")
  // The decoder ignores the last character's 4 unused low bits: without this, 16 spellings of a tag verify.
  if (presented.toString("base64url") !== tag) return "unknown"
  const expected = tagOf(key, orgUuid, encoded)
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) return "unknown"
  const expiresAtSeconds = Buffer.from(encoded, "base64url").readUIntBE(0, 6)
  return expiresAtSeconds * 1000 > nowMs ? "valid" : "expired"
}
