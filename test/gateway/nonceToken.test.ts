import { describe, expect, it } from "vitest"
import { checkNonce, issueNonce, nonceKey } from "../../src/nonces/NonceToken.ts"

const ORG = "6f1c2b9e-3d4a-4c5b-8e7f-0a1b2c3d4e5f"

describe("nonce tokens", () => {
  const key = nonceKey("org-secret")
  const now = Date.UTC(2026, 0, 1)

  it("verify until they expire, for their organization and key only", () => {
    const nonce = issueNonce(key, ORG, now + 24 * 3600_000)
    expect(checkNonce(key, ORG, nonce, now)).toBe("valid")
    expect(checkNonce(key, ORG, nonce, now + 24 * 3600_000)).toBe("expired")
    expect(checkNonce(nonceKey("rotated-secret"), ORG, nonce, now)).toBe("unknown")
    expect(checkNonce(key, "0b0e6d8a-1111-4c5b-8e7f-0a1b2c3d4e5f", nonce, now)).toBe("unknown")
    expect(checkNonce(key, ORG, "not a nonce", now)).toBe("unknown")
    expect(nonce).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
  })
})
