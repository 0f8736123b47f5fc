import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { Member } from "./Member.ts"
import { MemberError, MemberExists, MemberInvalid, MemberNotFound } from "./MemberError.ts"
import { DUMMY_HASH, hashPassword, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, verifyPassword } from "./Password.ts"

export interface NewMember {
  readonly orgUuid: string
  readonly email: string
  readonly password: string
}

/**
 * Members of organizations. Passwords are kept only as scrypt hashes
 * (Password.ts); emails are unique regardless of case. That the organization
 * exists is the caller's check (the Organizations service), so this domain
 * reads only its own table.
 */
export class Members extends Context.Service<Members, {
  create(input: NewMember): Effect.Effect<Member, MemberError>
  list(orgUuid?: string): Effect.Effect<ReadonlyArray<Member>>
  find(uuid: string): Effect.Effect<Member, MemberError>
  remove(uuid: string): Effect.Effect<Member, MemberError>
  /** The member when the password matches; undefined otherwise (unknown email or wrong password alike). */
  verify(email: string, password: string): Effect.Effect<Member | undefined>
}>()("vdb/members/Members") {
  static readonly layer = Layer.effect(
    Members,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const columns = sql`uuid::text AS uuid, org_uuid::text AS org_uuid, email, password_hash, created_at`

      const find = Effect.fn("Members.find")(function*(raw: string) {
        const uuid = yield* validUuid(raw)
        const rows = yield* sql<MemberRow>`SELECT ${columns} FROM members WHERE uuid = ${uuid}::uuid`.pipe(Effect.orDie)
        if (rows.length === 0) return yield* notFound(uuid)
        return toMember(rows[0]!)
      })

      return Members.of({
        create: Effect.fn("Members.create")(function*(input) {
          const valid = yield* validNew(input)
          const hash = yield* hashPassword(input.password)
          const uuid = randomUUID()
          const created = new Date(yield* Clock.currentTimeMillis)
          const rows = yield* sql<MemberRow>`INSERT INTO members (uuid, org_uuid, email, password_hash, created_at)
          VALUES (${uuid}::uuid, ${valid.orgUuid}::uuid, ${valid.email}, ${hash}, ${created})
          ON CONFLICT DO NOTHING RETURNING ${columns}`.pipe(Effect.orDie)
          if (rows.length === 0) return yield* exists(valid.email)
          return toMember(rows[0]!)
        }),
        list: Effect.fn("Members.list")(function*(orgUuid) {
          if (orgUuid !== undefined && !UUID.test(orgUuid.trim())) return []
          const rows = orgUuid === undefined
            ? yield* sql<MemberRow>`SELECT ${columns} FROM members ORDER BY created_at, uuid`.pipe(Effect.orDie)
            : yield* sql<MemberRow>`SELECT ${columns} FROM members WHERE org_uuid = ${orgUuid.trim()}::uuid
              ORDER BY created_at, uuid`.pipe(Effect.orDie)
          return rows.map(toMember)
        }),
        find,
        remove: Effect.fn("Members.remove")(function*(raw) {
          const member = yield* find(raw)
          // Of two removals at once, the one that deleted nothing is not found, as a later one is.
          const deleted = yield* sql`DELETE FROM members WHERE uuid = ${member.uuid}::uuid RETURNING uuid`.pipe(
            Effect.orDie
          )
          if (deleted.length === 0) return yield* notFound(member.uuid)
          return member
        }),
        verify: Effect.fn("Members.verify")(function*(email, password) {
          const rows = yield* sql<MemberRow>`SELECT ${columns} FROM members WHERE lower(email) = ${normalEmail(email)}`
            .pipe(Effect.orDie)
          const row = rows[0]
          const ok = yield* verifyPassword(password, row?.password_hash ?? DUMMY_HASH)
          return ok && row !== undefined ? toMember(row) : undefined
        })
      })
    })
  )

  static readonly layerMemory = Layer.sync(Members, () => {
    const members = new Map<string, { member: Member; hash: string }>()
    const find = (raw: string) =>
      Effect.flatMap(validUuid(raw), (uuid) => {
        const entry = members.get(uuid)
        return entry === undefined ? notFound(uuid) : Effect.succeed(entry.member)
      })
    return Members.of({
      create: Effect.fn("Members.create")(function*(input) {
        const valid = yield* validNew(input)
        if ([...members.values()].some((e) => e.member.email.toLowerCase() === valid.email)) {
          return yield* exists(valid.email)
        }
        const hash = yield* hashPassword(input.password)
        const member = new Member({
          uuid: randomUUID(),
          orgUuid: valid.orgUuid,
          email: valid.email,
          createdAt: new Date(yield* Clock.currentTimeMillis).toISOString()
        })
        members.set(member.uuid, { member, hash })
        return member
      }),
      list: (orgUuid) =>
        Effect.sync(() =>
          [...members.values()].map((e) => e.member).filter((m) =>
            orgUuid === undefined || m.orgUuid === orgUuid.toLowerCase()
          )
        ),
      find,
      remove: (raw) => Effect.flatMap(find(raw), (m) => members.delete(m.uuid) ? Effect.succeed(m) : notFound(m.uuid)),
      verify: Effect.fn("Members.verify")(function*(email, password) {
        const entry = [...members.values()].find((e) => e.member.email.toLowerCase() === normalEmail(email))
        const ok = yield* verifyPassword(password, entry?.hash ?? DUMMY_HASH)
        return ok ? entry?.member : undefined
      })
    })
  })
}

interface MemberRow {
  readonly uuid: string
  readonly org_uuid: string
  readonly email: string
  readonly password_hash: string
  readonly created_at: Date
}

const toMember = (row: MemberRow) =>
  new Member({
    uuid: row.uuid,
    orgUuid: row.org_uuid,
    email: row.email,
    createdAt: new Date(row.created_at).toISOString()
  })

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
// Deliberately loose (one @, no spaces or controls): the address is an identifier here, never mailed.
const EMAIL = /^[^\s@\p{Cc}]{1,64}@[^\s@\p{Cc}]{1,255}$/u

const invalid = (reason: string) => Effect.fail(new MemberError({ reason: new MemberInvalid({ reason }) }))
const notFound = (uuid: string) => Effect.fail(new MemberError({ reason: new MemberNotFound({ uuid }) }))
const exists = (email: string) => Effect.fail(new MemberError({ reason: new MemberExists({ email }) }))

const normalEmail = (email: string) => email.trim().toLowerCase()

const validUuid = (raw: string) =>
  UUID.test(raw.trim()) ? Effect.succeed(raw.trim().toLowerCase()) : invalid(`not a UUID: ${JSON.stringify(raw)}`)

const validNew = Effect.fnUntraced(function*(input: NewMember) {
  const orgUuid = yield* validUuid(input.orgUuid)
  const email = normalEmail(input.email)
  if (!EMAIL.test(email)) return yield* invalid("email must look like name@domain")
  if (input.password.length < PASSWORD_MIN_LENGTH) {
    return yield* invalid(`password must be at least ${PASSWORD_MIN_LENGTH} characters`)
  }
  if (input.password.length > PASSWORD_MAX_LENGTH) {
    return yield* invalid(`password must be at most ${PASSWORD_MAX_LENGTH} characters`)
  }
  return { orgUuid, email }
})
