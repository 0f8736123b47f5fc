import type { Redacted } from "effect"
import { createHash, randomBytes } from "node:crypto"

/** What the client said it is and where it called from: shown on the approval page so a user can spot phishing. */
export interface GrantClient {
  readonly name: string
  readonly version: string
  readonly address: string
}

export interface IssuedGrant {
  readonly deviceCode: Redacted.Redacted<string>
  readonly userCode: string
  readonly expiresIn: number
  readonly interval: number
}

export type GrantStatus = "pending" | "approved" | "denied" | "redeemed" | "expired"

/** A grant as the approval page sees it: never the device code, the organization or a key. */
export interface GrantView {
  readonly userCode: string
  readonly client: GrantClient
  readonly createdAt: number
  readonly expiresAt: number
  readonly status: GrantStatus
}

/**
 * The answer to one token poll (RFC 8628 §3.5). `issued` happens once per
 * grant: the redemption is a single conditional update.
 */
export type PollOutcome =
  | { readonly _tag: "issued"; readonly memberUuid: string }
  | { readonly _tag: "authorization_pending" }
  | { readonly _tag: "slow_down" }
  | { readonly _tag: "expired_token" }
  | { readonly _tag: "access_denied" }
  | { readonly _tag: "invalid_grant" }

/** 32 bytes from the CSPRNG, base64url: 43 characters carrying 256 bits. */
export const newDeviceCode = () => randomBytes(32).toString("base64url")

export const deviceCodeHash = (deviceCode: string) => createHash("sha256").update(deviceCode).digest("hex")

/** Polls closer together than the interval minus this slack are `slow_down` (timers and networks jitter). */
export const POLL_SLACK_MILLIS = 500

/**
 * RFC 8628 §3.5: each `slow_down` raises the grant's interval by 5 s "for this and all subsequent
 * requests". The server holds the client to it: the raised interval is stored with the grant, so a
 * poll sooner than it is `slow_down` again (and raises it again), on whichever process answers.
 */
export const SLOW_DOWN_STEP_SECONDS = 5

/** Grants are deleted a day after they expire (their user codes become free again). */
export const GRANT_RETENTION_MILLIS = 24 * 60 * 60 * 1000

const UNPRINTABLE = /[\p{Cc}\p{Cf}\u2028\u2029]/gu

/** Client-supplied text, made safe to store and show: printable, trimmed, bounded. */
export const clientText = (raw: unknown, fallback: string, max = 100): string => {
  if (typeof raw !== "string") return fallback
  const clean = raw.replace(UNPRINTABLE, "").trim().slice(0, max)
  return clean.length === 0 ? fallback : clean
}
