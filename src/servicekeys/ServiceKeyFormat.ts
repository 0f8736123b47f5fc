import { createHash, randomBytes, timingSafeEqual } from "node:crypto"

/**
 * Service API keys: `vdb_sk_` + 43 base62 characters (32 random bytes).
 * The prefix makes them recognisable (secret scanners, support) and keeps a
 * provider key (`sk-...`, `sk-ant-...`) from ever parsing as one of ours.
 */
export const SERVICE_KEY_PREFIX = "vdb_sk_"

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
/** 62^43 > 2^256, so 43 digits hold any 32-byte value. */
const DIGITS = 43
const SHAPE = /^vdb_sk_[0-9A-Za-z]{43}$/

const base62 = (bytes: Uint8Array): string => {
  let n = BigInt(`0x${Buffer.from(bytes).toString("hex")}`)
  let out = ""
  for (let i = 0; i < DIGITS; i++) {
    out = ALPHABET[Number(n % 62n)] + out
    n /= 62n
  }
  return out
}

export const generateServiceKey = (): string => SERVICE_KEY_PREFIX + base62(randomBytes(32))

export const isServiceKeyShaped = (presented: string): boolean => SHAPE.test(presented)

/**
 * The stored verifier: SHA-256 of the whole key. The key carries 256 bits of
 * randomness, so a fast unsalted hash is enough (nothing to brute-force), and
 * unlike an HMAC under a master-derived key it survives master-key rotation.
 */
export const serviceKeyVerifier = (key: string): Buffer => createHash("sha256").update(key, "utf8").digest()

export const verifierMatches = (presented: Buffer, stored: Buffer): boolean =>
  presented.length === stored.length && timingSafeEqual(presented, stored)
