import { Clock, Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { createHash, randomBytes } from "node:crypto"
import type { Member } from "./Member.ts"
import { Members } from "./Members.ts"

/** A session lasts 12 hours from sign-in, then the member signs in again (no sliding renewal). */
export const SESSION_LIFETIME_MILLIS = 12 * 60 * 60 * 1000

export interface OpenedSession {
  /** The cookie value: 32 random bytes, base64url. Only its SHA-256 is stored. */
  readonly token: Redacted.Redacted<string>
  readonly expiresAt: number
}

/** Site sessions of signed-in members. */
export class Sessions extends Context.Service<Sessions, {
  /**
   * A new session for the member; undefined when the member no longer exists (removed after the
   * password check, a sign-in racing `member remove`): the caller answers as for an unknown member.
   */
  open(member: Member): Effect.Effect<OpenedSession | undefined>
  /** The member behind a live session; undefined for an unknown, expired or removed one. */
  resolve(token: string): Effect.Effect<Member | undefined>
  close(token: string): Effect.Effect<void>
}>()("vdb/members/Sessions") {
  static readonly layer = Layer.effect(
    Sessions,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const members = yield* Members
      return Sessions.of({
        open: Effect.fn("Sessions.open")(function*(member) {
          const now = yield* Clock.currentTimeMillis
          const token = newToken()
          const expiresAt = now + SESSION_LIFETIME_MILLIS
          // Expired rows go whenever someone signs in, so the table stays small.
          yield* sql`DELETE FROM member_sessions WHERE expires_at <= ${new Date(now)}`.pipe(Effect.orDie)
          // Inserted only while the member exists, in one statement: FOR KEY SHARE waits for a removal
          // in flight and skips the member once it is gone (READ COMMITTED), and holds off a later one
          // until this commits (which then cascades to the session), so the foreign key is never broken.
          const inserted = yield* sql`INSERT INTO member_sessions (token_hash, member_uuid, created_at, expires_at)
          SELECT ${sha256(token)}::text, uuid, ${new Date(now)}::timestamptz, ${new Date(expiresAt)}::timestamptz
          FROM members WHERE uuid = ${member.uuid}::uuid FOR KEY SHARE
          RETURNING token_hash`.pipe(Effect.orDie)
          if (inserted.length === 0) return undefined
          return { token: Redacted.make(token), expiresAt }
        }),
        resolve: Effect.fn("Sessions.resolve")(function*(token) {
          const now = yield* Clock.currentTimeMillis
          const rows = yield* sql<{ member_uuid: string }>`SELECT member_uuid::text AS member_uuid FROM member_sessions
          WHERE token_hash = ${sha256(token)} AND expires_at > ${new Date(now)}`.pipe(Effect.orDie)
          if (rows.length === 0) return undefined
          return yield* members.find(rows[0]!.member_uuid).pipe(Effect.orElseSucceed(() => undefined))
        }),
        close: (token) =>
          sql`DELETE FROM member_sessions WHERE token_hash = ${sha256(token)}`.pipe(Effect.orDie, Effect.asVoid)
      })
    })
  )

  static readonly layerMemory = Layer.effect(
    Sessions,
    Effect.gen(function*() {
      const members = yield* Members
      const sessions = new Map<string, { memberUuid: string; expiresAt: number }>()
      return Sessions.of({
        open: Effect.fn("Sessions.open")(function*(member) {
          const now = yield* Clock.currentTimeMillis
          const token = newToken()
          const expiresAt = now + SESSION_LIFETIME_MILLIS
          if (
            !(yield* members.find(member.uuid).pipe(Effect.as(true), Effect.orElseSucceed(() => false)))
          ) return undefined
          sessions.set(sha256(token), { memberUuid: member.uuid, expiresAt })
          return { token: Redacted.make(token), expiresAt }
        }),
        resolve: Effect.fn("Sessions.resolve")(function*(token) {
          const now = yield* Clock.currentTimeMillis
          const entry = sessions.get(sha256(token))
          if (entry === undefined || entry.expiresAt <= now) return undefined
          return yield* members.find(entry.memberUuid).pipe(Effect.orElseSucceed(() => undefined))
        }),
        close: (token) => Effect.sync(() => void sessions.delete(sha256(token)))
      })
    })
  )
}

const newToken = () => randomBytes(32).toString("base64url")

export const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")
