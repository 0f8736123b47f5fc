import { randomInt } from "node:crypto"

/**
 * RFC 8628 §6.1's base-20 consonant alphabet: no vowels (no words), and none
 * of the characters people confuse (0/O, 1/I/L, 5/S, 8/B are absent or unique).
 * 20^6 ≈ 6.4e7 codes; guessing is bounded by the approval throttle and the
 * grant lifetime.
 */
export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"

/** `XXX-XXX` from the CSPRNG. */
export const newUserCode = (): string => {
  let code = ""
  for (let i = 0; i < 6; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)]
  return `${code.slice(0, 3)}-${code.slice(3)}`
}

const TYPED = /^[A-Z]{3}-?[A-Z]{3}$/

/** Accepts any case, with or without the hyphen and surrounding spaces; undefined when it cannot be a code. */
export const normalizeUserCode = (input: string): string | undefined => {
  const upper = input.trim().toUpperCase()
  if (!TYPED.test(upper)) return undefined
  const bare = upper.replace("-", "")
  if ([...bare].some((c) => !USER_CODE_ALPHABET.includes(c))) return undefined
  return `${bare.slice(0, 3)}-${bare.slice(3)}`
}
