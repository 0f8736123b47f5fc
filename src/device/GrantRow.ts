import { Effect, Redacted } from "effect"
import { DeviceError, ExpiredUserCode, UnknownUserCode, UsedUserCode } from "./DeviceError.ts"
import { clientText, type GrantStatus, type GrantView, type IssuedGrant, type PollOutcome } from "./DeviceGrant.ts"
import type { GrantTiming } from "./DeviceSettings.ts"

/** A `device_grants` row as both stores read it: what decides the grant's state and what the pages show. */
export interface GrantRow {
  readonly user_code: string
  readonly client_name: string
  readonly client_version: string
  readonly client_address: string
  readonly created_at: Date
  readonly expires_at: Date
  readonly approved_at: Date | null
  readonly denied_at: Date | null
  readonly redeemed_at: Date | null
}

const millis = (d: Date | string) => new Date(d).getTime()

export const statusOf = (row: GrantRow, now: number): GrantStatus =>
  row.redeemed_at !== null
    ? "redeemed"
    : row.denied_at !== null
    ? "denied"
    : millis(row.expires_at) <= now
    ? "expired"
    : row.approved_at !== null
    ? "approved"
    : "pending"

export const toView = (row: GrantRow, now: number): GrantView => ({
  userCode: row.user_code,
  client: {
    name: clientText(row.client_name, "unknown client"),
    version: clientText(row.client_version, "unknown version"),
    address: row.client_address
  },
  createdAt: millis(row.created_at),
  expiresAt: millis(row.expires_at),
  status: statusOf(row, now)
})

/** What a member decided on a grant: a redeemed grant was approved; undefined while nobody has. */
export const decisionOf = (row: GrantRow): "approved" | "denied" | undefined =>
  row.denied_at !== null ? "denied" : row.approved_at !== null ? "approved" : undefined

export const fail = (reason: UnknownUserCode | ExpiredUserCode | UsedUserCode) =>
  Effect.fail(new DeviceError({ reason }))

/** Why a decision on this grant is refused (it was not pending). */
export const refusal = (row: GrantRow | undefined, now: number) => {
  if (row === undefined) return fail(new UnknownUserCode())
  const status = statusOf(row, now)
  return fail(status === "expired" ? new ExpiredUserCode() : new UsedUserCode())
}

/**
 * A poll on a grant that is neither redeemable nor pending within the
 * interval: replays and refusals are `access_denied`, expiry `expired_token`,
 * and a pending grant polled too soon `slow_down`.
 */
export const settled = (row: GrantRow | undefined, now: number): PollOutcome => {
  if (row === undefined) return { _tag: "invalid_grant" }
  switch (statusOf(row, now)) {
    case "redeemed":
    case "denied":
      return { _tag: "access_denied" }
    case "expired":
      return { _tag: "expired_token" }
    case "approved":
      // Approved and not redeemed: redeemable, so never a final answer (callers redeem it instead).
      return { _tag: "authorization_pending" }
    case "pending":
      return { _tag: "slow_down" }
  }
}

export const issued = (deviceCode: string, userCode: string, timing: GrantTiming): IssuedGrant => ({
  deviceCode: Redacted.make(deviceCode),
  userCode,
  expiresIn: timing.lifetimeSeconds,
  interval: timing.intervalSeconds
})
