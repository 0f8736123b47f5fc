import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { withGrantMetrics } from "../metrics/DeviceMetrics.ts"
import type { DeviceError } from "./DeviceError.ts"
import { UnknownUserCode } from "./DeviceError.ts"
import {
  deviceCodeHash,
  GRANT_RETENTION_MILLIS,
  type GrantClient,
  type GrantView,
  type IssuedGrant,
  newDeviceCode,
  POLL_SLACK_MILLIS,
  type PollOutcome,
  SLOW_DOWN_STEP_SECONDS
} from "./DeviceGrant.ts"
import { DeviceSettings, type GrantTiming, timingOf } from "./DeviceSettings.ts"
import { decisionOf, fail, type GrantRow, issued, refusal, settled, statusOf, toView } from "./GrantRow.ts"
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
  /** What this member decided on the grant (the result page); undefined when they did not decide it. */
  decisionBy(userCode: string, memberUuid: string): Effect.Effect<"approved" | "denied" | undefined>
  /** One token poll; a pending grant polled sooner than its interval is `slow_down` and its interval grows by 5 s. */
  poll(deviceCode: string): Effect.Effect<PollOutcome>
}>()("vdb/device/DeviceGrants") {
  static readonly layerWith = (timing: GrantTiming) =>
    Layer.effect(
      DeviceGrants,
      Effect.gen(function*() {
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

        return withGrantMetrics(DeviceGrants.of({
          authorize: Effect.fn("DeviceGrants.authorize")(function*(client) {
            const now = yield* Clock.currentTimeMillis
            yield* sql`DELETE FROM device_grants WHERE expires_at < ${new Date(now - GRANT_RETENTION_MILLIS)}`.pipe(
              Effect.orDie
            )
            const deviceCode = newDeviceCode()
            // A user code may collide with a live one (1 in ~6e7 per live grant): draw again.
            for (let attempt = 0;; attempt++) {
              const userCode = newUserCode()
              const rows =
                yield* sql`INSERT INTO device_grants (device_code_hash, user_code, client_name, client_version,
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
          decisionBy: Effect.fn("DeviceGrants.decisionBy")(function*(raw, memberUuid) {
            const userCode = normalizeUserCode(raw)
            if (userCode === undefined) return undefined
            const rows = yield* sql<GrantRow>`SELECT ${columns} FROM device_grants
            WHERE user_code = ${userCode} AND member_uuid = ${memberUuid}::uuid`.pipe(Effect.orDie)
            return rows.length === 0 ? undefined : decisionOf(rows[0]!)
          }),
          poll: Effect.fn("DeviceGrants.poll")(function*(deviceCode) {
            const hash = deviceCodeHash(deviceCode)
            const nowMillis = yield* Clock.currentTimeMillis
            const now = new Date(nowMillis)
            // The interval is the row's own (raised by every slow_down), so it holds on any process.
            const slackedNow = new Date(nowMillis + POLL_SLACK_MILLIS)
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
                AND (last_polled_at IS NULL
                  OR last_polled_at <= ${slackedNow}::timestamptz - make_interval(secs => interval_seconds))
              RETURNING user_code`.pipe(Effect.orDie)
              if (pending.length > 0) return { _tag: "authorization_pending" } as const
              // Pending and too soon (the update above re-checks the newest row, so of two racing polls one
              // is this): slow_down, counted from this poll, with the interval raised for the next.
              const slowed = yield* sql`UPDATE device_grants
              SET last_polled_at = ${now}, interval_seconds = interval_seconds + ${SLOW_DOWN_STEP_SECONDS}
              WHERE device_code_hash = ${hash} AND approved_at IS NULL AND denied_at IS NULL AND expires_at > ${now}
              RETURNING user_code`.pipe(Effect.orDie)
              if (slowed.length > 0) return { _tag: "slow_down" } as const
              const row = (yield* sql<GrantRow>`SELECT ${columns} FROM device_grants WHERE device_code_hash = ${hash}`
                .pipe(Effect.orDie))[0]
              if (row === undefined || statusOf(row, nowMillis) !== "approved") return settled(row, nowMillis)
            }
            // Still approved and unredeemed after three rounds: never a final answer for it; the client polls again.
            return { _tag: "authorization_pending" } as const
          })
        }))
      })
    )

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
        intervalSeconds: number
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
            intervalSeconds: timing.intervalSeconds,
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
        decisionBy: (raw, memberUuid) =>
          Effect.sync(() => {
            const userCode = normalizeUserCode(raw)
            const entry = userCode === undefined ? undefined : grants.get(userCode)
            return entry === undefined || entry.memberUuid !== memberUuid ? undefined : decisionOf(entry.row)
          }),
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
            if (status !== "pending") return settled(entry.row, now)
            const tooSoon = entry.lastPolledAt !== null &&
              now - entry.lastPolledAt < entry.intervalSeconds * 1000 - POLL_SLACK_MILLIS
            entry.lastPolledAt = now
            if (!tooSoon) return { _tag: "authorization_pending" }
            entry.intervalSeconds += SLOW_DOWN_STEP_SECONDS
            return { _tag: "slow_down" }
          })
      })
    })

  static readonly layerMemory = Layer.unwrap(Effect.orDie(Effect.gen(function*() {
    return DeviceGrants.layerMemoryWith(timingOf(yield* DeviceSettings))
  })))
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }
