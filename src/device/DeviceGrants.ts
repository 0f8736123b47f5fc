import { Clock, Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import {
  clientText,
  deviceCodeHash,
  GRANT_RETENTION_MILLIS,
  type GrantClient,
  type GrantStatus,
  type GrantView,
  type IssuedGrant,
  newDeviceCode,
  POLL_SLACK_MILLIS,
  type PollOutcome
} from "./DeviceGrant.ts"
import { DeviceError, ExpiredUserCode, UnknownUserCode, UsedUserCode } from "./DeviceError.ts"
import { DeviceSettings, type GrantTiming, timingOf } from "./DeviceSettings.ts"
import { newUserCode, normalizeUserCode } from "./UserCode.ts"

/**
 * RFC 8628 device grants: pending → approved → redeemed (once), or denied, or
 * expired. Only the SHA-256 of the device code is stored; the member is null
 * until someone approves or denies. Every time comes from `Clock`.
 */
export class DeviceGrants extends Context.Service<DeviceGrants, {
  authorize(client: GrantClient): Effect.Effect<IssuedGrant>
  /** The grant behind a user code, for the approval page; marks it claimed (a signed-in member has seen it). */
  claim(userCode: string): Effect.Effect<GrantView, DeviceError>
  approve(userCode: string, memberUuid: string): Effect.Effect<GrantView, DeviceError>
  deny(userCode: string, memberUuid: string): Effect.Effect<GrantView, DeviceError>
  poll(deviceCode: string): Effect.Effect<PollOutcome>
}>()("vdb/device/DeviceGrants") {
  static readonly layerWith = (timing: GrantTiming) =>
    Layer.effect(DeviceGrants, Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const columns = sql`user_code, client_name, client_version, client_address, created_at, expires_at,
        approved_at, denied_at, redeemed_at`
      const byCode = (userCode: string) =>
        sql<GrantRow>`SELECT ${columns} FROM device_grants WHERE user_code = ${userCode}`.pipe(Effect.orDie)

      const decide = (decision: "approve" | "deny") =>
        Effect.fn(`DeviceGrants.${decision}`)(function*(raw: string, memberUuid: string) {
          const userCode = normalizeUserCode(raw)
          if (userCode === undefined) return yield* fail(new UnknownUserCode())
          const now = new Date(yield* Clock.currentTimeMillis)
          // One conditional update: of two members deciding at once, exactly one wins.
          const rows = decision === "approve"
            ? yield* sql<GrantRow>`UPDATE device_grants SET member_uuid = ${memberUuid}::uuid,
                claimed_at = COALESCE(claimed_at, ${now}), approved_at = ${now}
                WHERE user_code = ${userCode} AND approved_at IS NULL AND denied_at IS NULL AND expires_at > ${now}
                RETURNING ${columns}`.pipe(Effect.orDie)
            : yield* sql<GrantRow>`UPDATE device_grants SET member_uuid = ${memberUuid}::uuid,
                claimed_at = COALESCE(claimed_at, ${now}), denied_at = ${now}
                WHERE user_code = ${userCode} AND approved_at IS NULL AND denied_at IS NULL AND expires_at > ${now}
                RETURNING ${columns}`.pipe(Effect.orDie)
          if (rows.length > 0) return toView(rows[0]!, now.getTime())
          return yield* refusal((yield* byCode(userCode))[0], now.getTime())
        })

      return DeviceGrants.of({
        authorize: Effect.fn("DeviceGrants.authorize")(function*(client) {
          const now = yield* Clock.currentTimeMillis
          yield* sql`DELETE FROM device_grants WHERE expires_at < ${new Date(now - GRANT_RETENTION_MILLIS)}`.pipe(Effect.orDie)
          const deviceCode = newDeviceCode()
          // A user code may collide with a live one (1 in ~6e7 per live grant): draw again.
          for (let attempt = 0; ; attempt++) {
            const userCode = newUserCode()
            const rows = yield* sql`INSERT INTO device_grants (device_code_hash, user_code, client_name, client_version,
                client_address, created_at, expires_at, interval_seconds)
              VALUES (${deviceCodeHash(deviceCode)}, ${userCode}, ${client.name}, ${client.version}, ${client.address},
                ${new Date(now)}, ${new Date(now + timing.lifetimeSeconds * 1000)}, ${timing.intervalSeconds})
              ON CONFLICT (user_code) DO NOTHING RETURNING user_code`.pipe(Effect.orDie)
            if (rows.length > 0) return issued(deviceCode, userCode, timing)
            if (attempt >= 10) return yield* Effect.die(new Error("could not draw a free user code"))
          }
        }),
        claim: Effect.fn("DeviceGrants.claim")(function*(raw) {
          const userCode = normalizeUserCode(raw)
          if (userCode === undefined) return yield* fail(new UnknownUserCode())
          const now = yield* Clock.currentTimeMillis
          const row = (yield* byCode(userCode))[0]
          if (row === undefined || statusOf(row, now) !== "pending") return yield* refusal(row, now)
          // Claimed: a signed-in member has looked at it. The member reference stays null until a decision.
          yield* sql`UPDATE device_grants SET claimed_at = COALESCE(claimed_at, ${new Date(now)})
            WHERE user_code = ${userCode}`.pipe(Effect.orDie)
          return toView(row, now)
        }),
        approve: decide("approve"),
        deny: decide("deny"),
        poll: Effect.fn("DeviceGrants.poll")(function*(deviceCode) {
          const hash = deviceCodeHash(deviceCode)
          const nowMillis = yield* Clock.currentTimeMillis
          const now = new Date(nowMillis)
          const earliest = new Date(nowMillis - timing.intervalSeconds * 1000 + POLL_SLACK_MILLIS)
          // Each statement reads its own snapshot: an approval that commits after the redeeming update
          // shows up in a later one as "approved and not redeemed". That grant is still redeemable, so
          // go round again rather than answer from it (an approval happens once, so this settles).
          for (let attempt = 0; attempt < 3; attempt++) {
            const redeemed = yield* sql<{ member_uuid: string }>`UPDATE device_grants
              SET redeemed_at = ${now}, last_polled_at = ${now}
              WHERE device_code_hash = ${hash} AND approved_at IS NOT NULL AND redeemed_at IS NULL AND expires_at > ${now}
              RETURNING member_uuid::text AS member_uuid`.pipe(Effect.orDie)
            if (redeemed.length > 0) return { _tag: "issued", memberUuid: redeemed[0]!.member_uuid } as const
            const pending = yield* sql`UPDATE device_grants SET last_polled_at = ${now}
              WHERE device_code_hash = ${hash} AND approved_at IS NULL AND denied_at IS NULL AND expires_at > ${now}
                AND (last_polled_at IS NULL OR last_polled_at <= ${earliest})
              RETURNING user_code`.pipe(Effect.orDie)
            if (pending.length > 0) return { _tag: "authorization_pending" } as const
            const row = (yield* sql<GrantRow>`SELECT ${columns} FROM device_grants WHERE device_code_hash = ${hash}`
              .pipe(Effect.orDie))[0]
            if (row === undefined || statusOf(row, nowMillis) !== "approved") return settled(row, nowMillis)
          }
          // Still approved and unredeemed after three rounds: never a final answer for it; the client polls again.
          return { _tag: "authorization_pending" } as const
        })
      })
    }))

  static readonly layer = Layer.unwrap(Effect.orDie(Effect.gen(function*() {
    return DeviceGrants.layerWith(timingOf(yield* DeviceSettings))
  })))

  static readonly layerMemoryWith = (timing: GrantTiming) =>
    Layer.sync(DeviceGrants, () => {
      interface Entry {
        row: Mutable<GrantRow>
        hash: string
        memberUuid: string | null
        lastPolledAt: number | null
      }
      const grants = new Map<string, Entry>()
      const byHash = (hash: string) => [...grants.values()].find((e) => e.hash === hash)

      const decide = (decision: "approve" | "deny") =>
        Effect.fn(`DeviceGrants.${decision}`)(function*(raw: string, memberUuid: string) {
          const userCode = normalizeUserCode(raw)
          if (userCode === undefined) return yield* fail(new UnknownUserCode())
          const now = yield* Clock.currentTimeMillis
          const entry = grants.get(userCode)
          if (entry === undefined || statusOf(entry.row, now) !== "pending") return yield* refusal(entry?.row, now)
          entry.memberUuid = memberUuid
          if (decision === "approve") entry.row.approved_at = new Date(now)
          else entry.row.denied_at = new Date(now)
          return toView(entry.row, now)
        })

      return DeviceGrants.of({
        authorize: Effect.fn("DeviceGrants.authorize")(function*(client) {
          const now = yield* Clock.currentTimeMillis
          const deviceCode = newDeviceCode()
          let userCode = newUserCode()
          while (grants.has(userCode)) userCode = newUserCode()
          grants.set(userCode, {
            hash: deviceCodeHash(deviceCode),
            memberUuid: null,
            lastPolledAt: null,
            row: {
              user_code: userCode,
              client_name: client.name,
              client_version: client.version,
              client_address: client.address,
              created_at: new Date(now),
              expires_at: new Date(now + timing.lifetimeSeconds * 1000),
              approved_at: null,
              denied_at: null,
              redeemed_at: null
            }
          })
          return issued(deviceCode, userCode, timing)
        }),
        claim: Effect.fn("DeviceGrants.claim")(function*(raw) {
          const userCode = normalizeUserCode(raw)
          if (userCode === undefined) return yield* fail(new UnknownUserCode())
          const now = yield* Clock.currentTimeMillis
          const entry = grants.get(userCode)
          if (entry === undefined || statusOf(entry.row, now) !== "pending") return yield* refusal(entry?.row, now)
          return toView(entry.row, now)
        }),
        approve: decide("approve"),
        deny: decide("deny"),
        poll: (deviceCode) =>
          Effect.map(Clock.currentTimeMillis, (now): PollOutcome => {
            const entry = byHash(deviceCodeHash(deviceCode))
            if (entry === undefined) return { _tag: "invalid_grant" }
            const status = statusOf(entry.row, now)
            if (status === "approved") {
              entry.row.redeemed_at = new Date(now)
              entry.lastPolledAt = now
              return { _tag: "issued", memberUuid: entry.memberUuid! }
            }
            if (status === "pending") {
              if (entry.lastPolledAt !== null && now - entry.lastPolledAt < timing.intervalSeconds * 1000 - POLL_SLACK_MILLIS) {
                return { _tag: "slow_down" }
              }
              entry.lastPolledAt = now
              return { _tag: "authorization_pending" }
            }
            return settled(entry.row, now)
          })
      })
    })

  static readonly layerMemory = Layer.unwrap(Effect.orDie(Effect.gen(function*() {
    return DeviceGrants.layerMemoryWith(timingOf(yield* DeviceSettings))
  })))
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

interface GrantRow {
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

const statusOf = (row: GrantRow, now: number): GrantStatus =>
  row.redeemed_at !== null
    ? "redeemed"
    : row.denied_at !== null
    ? "denied"
    : millis(row.expires_at) <= now
    ? "expired"
    : row.approved_at !== null
    ? "approved"
    : "pending"

const toView = (row: GrantRow, now: number): GrantView => ({
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

const fail = (reason: UnknownUserCode | ExpiredUserCode | UsedUserCode) => Effect.fail(new DeviceError({ reason }))

/** Why a decision on this grant is refused (it was not pending). */
const refusal = (row: GrantRow | undefined, now: number) => {
  if (row === undefined) return fail(new UnknownUserCode())
  const status = statusOf(row, now)
  return fail(status === "expired" ? new ExpiredUserCode() : new UsedUserCode())
}

/**
 * A poll on a grant that is neither redeemable nor pending within the
 * interval: replays and refusals are `access_denied`, expiry `expired_token`,
 * and a pending grant polled too soon `slow_down`.
 */
const settled = (row: GrantRow | undefined, now: number): PollOutcome => {
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

const issued = (deviceCode: string, userCode: string, timing: GrantTiming): IssuedGrant => ({
  deviceCode: Redacted.make(deviceCode),
  userCode,
  expiresIn: timing.lifetimeSeconds,
  interval: timing.intervalSeconds
})
