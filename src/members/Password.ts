import { Effect } from "effect"
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"

/**
 * scrypt from `node:crypto` (RFC 7914), parameters recorded in the stored text
 * so they can be raised later without invalidating old hashes:
 * N = 2^15, r = 8, p = 1 (32 MiB, OWASP's minimum for scrypt), 16-byte salt,
 * 32-byte derived key. Stored as `scrypt$15$8$1$<salt b64>$<key b64>`.
 */
const LOG_N = 15
const R = 8
const P = 1
const KEY_BYTES = 32
const SALT_BYTES = 16

const derive = (password: string, salt: Buffer, logN: number, r: number, p: number, length: number) =>
  Effect.callback<Buffer>((resume) => {
    // Off the event loop (libuv thread pool): a sign-in must not stall other requests.
    scrypt(
      password.normalize("NFC"),
      salt,
      length,
      { N: 2 ** logN, r, p, maxmem: 256 * 2 ** logN * r * p },
      (error, key) => resume(error === null ? Effect.succeed(key) : Effect.die(error))
    )
  })

export const hashPassword = Effect.fnUntraced(function*(password: string) {
  const salt = randomBytes(SALT_BYTES)
  const key = yield* derive(password, salt, LOG_N, R, P, KEY_BYTES)
  return `scrypt$${LOG_N}$${R}$${P}$${salt.toString("base64")}$${key.toString("base64")}`
})

const STORED = /^scrypt\$(\d{1,2})\$(\d{1,2})\$(\d{1,2})\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/

/** Constant-time comparison; an unreadable stored value never matches. */
export const verifyPassword = Effect.fnUntraced(function*(password: string, stored: string) {
  const match = STORED.exec(stored)
  if (match === null) return false
  const expected = Buffer.from(match[5]!, "base64")
  const key = yield* derive(
    password,
    Buffer.from(match[4]!, "base64"),
    Number(match[1]),
    Number(match[2]),
    Number(match[3]),
    expected.length
  )
  return key.length === expected.length && timingSafeEqual(key, expected)
})

/** Verified against when the email is unknown, so the answer takes as long as for a known one. */
export const DUMMY_HASH = `scrypt$${LOG_N}$${R}$${P}$${Buffer.alloc(SALT_BYTES).toString("base64")}$${
  Buffer.alloc(KEY_BYTES).toString("base64")
}`

export const PASSWORD_MIN_LENGTH = 8
export const PASSWORD_MAX_LENGTH = 1024
