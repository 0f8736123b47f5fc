import { describe, expect, it } from "vitest"
import { checkNonce, issueNonce, nonceKey } from "../../src/nonces/NonceToken.ts"

const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

describe("nonce tokens are not malleable", () => {
  const key = nonceKey("org-secret")
  const now = Date.UTC(2026, 0, 1)

  it("only the issued spelling of a tag verifies: its last character's unused bits are not ignored", () => {
    for (let n = 0; n < 20; n++) {
      const nonce = issueNonce(key, ORG, now + 3600_000)
      const spellings = [...ALPHABET].map((c) => nonce.slice(0, -1) + c)
      // 16 of these decode to the issued tag's bytes (a lenient decoder reads them alike); one is canonical.
      const sameBytes = spellings.filter((s) =>
        Buffer.from(s.split(".")[1]!, "base64url").equals(Buffer.from(nonce.split(".")[1]!, "base64url"))
      )
      expect(sameBytes).toHaveLength(16)
      expect(spellings.filter((s) => checkNonce(key, ORG, s, now) === "valid")).toEqual([nonce])
      for (const s of sameBytes) if (s !== nonce) expect(checkNonce(key, ORG, s, now)).toBe("unknown")
    }
  })

  it("an expired nonce respelled is unknown, not expired", () => {
    const nonce = issueNonce(key, ORG, now - 1000)
    expect(checkNonce(key, ORG, nonce, now)).toBe("expired")
    const last = ALPHABET.indexOf(nonce.at(-1)!)
    expect(checkNonce(key, ORG, nonce.slice(0, -1) + ALPHABET[last ^ 1]!, now)).toBe("unknown")
  })
})
