import {
  Clock,
  Context,
  DateTime,
  Effect,
  Exit,
  Layer,
  Redacted,
  Request,
  RequestResolver,
  Schedule,
  Schema
} from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { randomUUID } from "node:crypto"
import { Organization, type OrgCredentials, type OrgLimits, OrgUuid } from "../../schema/Organization.ts"
import { Invalidation } from "../db/Invalidation.ts"
import { SecretBox } from "../secrets/SecretBox.ts"
import type { OrgError } from "./OrgError.ts"
import { decodeRows, ORG_COLUMNS, OrgRow, toOrganization } from "./OrgRow.ts"
import { credentials, type NewOrganization, newSecret, notFound, validLimits, validNew, validUuid } from "./OrgRules.ts"

/**
 * Organizations: the tenants of every service. The secret is 64 hex characters
 * from the cryptographic random source, stored sealed under the master key and
 * shown only when created or rotated.
 */
export class Organizations extends Context.Service<Organizations, {
  create(input: NewOrganization): Effect.Effect<OrgCredentials, OrgError>
  list(): Effect.Effect<ReadonlyArray<Organization>>
  show(uuid: string): Effect.Effect<Organization, OrgError>
  rotateSecret(uuid: string): Effect.Effect<OrgCredentials, OrgError>
  setActive(uuid: string, active: boolean): Effect.Effect<Organization, OrgError>
  setLimits(uuid: string, limits: OrgLimits): Effect.Effect<Organization, OrgError>
  /**
   * For authentication: cached per process and dropped by the `organization` invalidation
   * (published by every change, from any process), so rotation and deactivation take effect at once.
   */
  secretOf(
    uuid: string
  ): Effect.Effect<{ readonly org: Organization; readonly secret: Redacted.Redacted<string> }, OrgError>
}>()("vdb/orgs/Organizations") {
  static readonly layer = Layer.effect(
    Organizations,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const box = yield* SecretBox
      const bus = yield* Invalidation
      // Every process caches what it read about an organization (gateway key state, opened secrets).
      const changed = (uuid: string) => bus.publish("organization", uuid)

      const columns = sql.literal(ORG_COLUMNS)
      const select = SqlSchema.findAll({
        Request: Schema.String,
        Result: OrgRow,
        execute: (uuid) => sql`SELECT ${columns} FROM organizations WHERE uuid = ${uuid}::uuid`
      })
      const selectAll = SqlSchema.findAll({
        Request: Schema.Void,
        Result: OrgRow,
        execute: () => sql`SELECT ${columns} FROM organizations ORDER BY created_at, uuid`
      })
      const selectMany = SqlSchema.findAll({
        Request: Schema.Array(Schema.String),
        Result: OrgRow,
        execute: (uuids) => sql`SELECT ${columns} FROM organizations WHERE uuid = ANY(${uuids}::uuid[])`
      })

      const find = Effect.fnUntraced(function*(raw: string) {
        const uuid = yield* validUuid(raw)
        const rows = yield* Effect.orDie(select(uuid))
        if (rows.length === 0) return yield* notFound(uuid)
        return rows[0]!
      })

      const create = Effect.fn("Organizations.create")(function*(input: NewOrganization) {
        const valid = yield* validNew(input)
        const uuid = randomUUID()
        const secret = newSecret()
        const sealed = yield* box.seal(secret)
        yield* sql`INSERT INTO organizations (uuid, name, secret_sealed, per_minute, per_week)
        VALUES (${uuid}::uuid, ${valid.name}, ${sealed}, ${valid.perMinute}, ${valid.perWeek})`.pipe(Effect.orDie)
        return credentials(uuid, valid.name, secret)
      })

      const list = Effect.fn("Organizations.list")(function*() {
        const rows = yield* Effect.orDie(selectAll(undefined))
        return rows.map(toOrganization)
      })

      const show = Effect.fn("Organizations.show")(function*(uuid: string) {
        return toOrganization(yield* find(uuid))
      })

      const rotateSecret = Effect.fn("Organizations.rotateSecret")(function*(raw: string) {
        const row = yield* find(raw)
        const secret = newSecret()
        const sealed = yield* box.seal(secret)
        yield* sql`UPDATE organizations SET secret_sealed = ${sealed}, updated_at = now() WHERE uuid = ${row.uuid}::uuid`
          .pipe(Effect.orDie)
        yield* changed(row.uuid)
        return credentials(row.uuid, row.name, secret)
      })

      const setActive = Effect.fn("Organizations.setActive")(function*(raw: string, active: boolean) {
        const row = yield* find(raw)
        yield* sql`UPDATE organizations SET is_active = ${active}, updated_at = now() WHERE uuid = ${row.uuid}::uuid`
          .pipe(Effect.orDie)
        yield* changed(row.uuid)
        return toOrganization((yield* Effect.orDie(select(row.uuid)))[0]!)
      })

      const setLimits = Effect.fn("Organizations.setLimits")(function*(raw: string, limits: OrgLimits) {
        const row = yield* find(raw)
        yield* validLimits(limits)
        // A limit not given keeps the value the row holds when the UPDATE runs, not when it was read
        // above: `org limits --per-minute` and `--per-week` run at once each kept the other's old value.
        const updated = yield* sql`UPDATE organizations SET
          per_minute = COALESCE(${limits.perMinute ?? null}::integer, per_minute),
          per_week = COALESCE(${limits.perWeek ?? null}::integer, per_week),
          updated_at = now()
        WHERE uuid = ${row.uuid}::uuid
        RETURNING ${columns}`.pipe(Effect.flatMap(decodeRows), Effect.orDie)
        yield* changed(row.uuid)
        return toOrganization(updated[0]!)
      })

      // Authentication's hot path: a map lookup. What was read about an organization (its row,
      // the opened secret) stays until a change to it is published by any process (`organization`
      // on the invalidation bus: rotation, activation, limits) or a lost bus connection clears all.
      // The TTL (a sweep, off the request path) bounds only what a lost notification could leave,
      // and how long a secret's plaintext stays in memory.
      const opened = new Map<string, { readonly at: number; readonly value: SecretOf }>()
      yield* Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        for (const [uuid, entry] of opened) if (now - entry.at >= OPENED_TTL_MILLIS) opened.delete(uuid)
      }).pipe(Effect.repeat(Schedule.spaced(OPENED_SWEEP_MILLIS)), Effect.forkScoped)
      // A read that overlapped a change may hold the row from before it: served, not kept.
      let generation = 0
      yield* bus.subscribe("organization", (event) =>
        Effect.sync(() => {
          generation++
          if (event._tag === "All") opened.clear()
          else opened.delete(event.key)
        }))
      // Concurrent misses share one read: reads requested in the same scheduler
      // turn go out as one statement, sent after every one of them was
      // requested, so each still sees the row as it is after its request arrived.
      const reads = RequestResolver.make<ReadOrg>((entries) =>
        Effect.gen(function*() {
          const uuids = [...new Set(entries.map((e) => e.request.uuid))]
          const rows = yield* Effect.orDie(selectMany(uuids))
          const byUuid = new Map(rows.map((r) => [r.uuid, r]))
          for (const entry of entries) entry.completeUnsafe(Exit.succeed(byUuid.get(entry.request.uuid)))
        })
      )
      const read = Effect.fnUntraced(function*(raw: string) {
        const now = yield* Clock.currentTimeMillis
        const uuid = yield* validUuid(raw)
        const started = generation
        const row = yield* Effect.request(ReadOrg({ uuid }), reads)
        if (row === undefined) return yield* notFound(uuid)
        const secret = yield* box.open(row.secret_sealed).pipe(Effect.orDie)
        const value: SecretOf = { org: toOrganization(row), secret: Redacted.make(secret) }
        if (started === generation && bus.live()) {
          opened.delete(row.uuid)
          if (opened.size >= OPENED_MAX) opened.delete(opened.keys().next().value!)
          opened.set(row.uuid, { at: now, value })
        }
        return value
      })
      // Keys are canonical (lower-case) UUIDs, which is what clients send; anything else is read (and checked).
      // While the bus is not live (its session reconnecting) a change could go unheard: read every time.
      const secretOf = (raw: string) => {
        const hit = bus.live() ? opened.get(raw) : undefined
        return hit === undefined ? read(raw) : Effect.succeed(hit.value)
      }

      return Organizations.of({ create, list, show, rotateSecret, setActive, setLimits, secretOf })
    })
  )

  static readonly layerMemory = Layer.effect(
    Organizations,
    Effect.gen(function*() {
      interface Entry {
        org: Organization
        secret: string
      }
      const orgs = new Map<string, Entry>()
      const now = DateTime.nowUnsafe
      const bus = yield* Invalidation

      const find = Effect.fnUntraced(function*(raw: string) {
        const uuid = yield* validUuid(raw)
        const entry = orgs.get(uuid)
        if (entry === undefined) return yield* notFound(uuid)
        return entry
      })
      const update = (entry: Entry, patch: Partial<Organization>) =>
        Effect.sync(() => {
          entry.org = new Organization({ ...entry.org, ...patch, updatedAt: now() })
          return entry.org
        }).pipe(Effect.tap((org) => bus.publish("organization", org.uuid)))

      return Organizations.of({
        create: Effect.fn("Organizations.create")(function*(input) {
          const valid = yield* validNew(input)
          const uuid = randomUUID()
          const secret = newSecret()
          const at = now()
          orgs.set(uuid, {
            org: new Organization({
              uuid: OrgUuid.make(uuid),
              name: valid.name,
              isActive: true,
              perMinute: valid.perMinute,
              perWeek: valid.perWeek,
              createdAt: at,
              updatedAt: at
            }),
            secret
          })
          return credentials(uuid, valid.name, secret)
        }),
        list: () => Effect.sync(() => Array.from(orgs.values(), (e) => e.org)),
        show: (uuid) => Effect.map(find(uuid), (e) => e.org),
        rotateSecret: Effect.fn("Organizations.rotateSecret")(function*(uuid) {
          const entry = yield* find(uuid)
          entry.secret = newSecret()
          yield* update(entry, {})
          return credentials(entry.org.uuid, entry.org.name, entry.secret)
        }),
        setActive: (uuid, active) => Effect.flatMap(find(uuid), (e) => update(e, { isActive: active })),
        setLimits: Effect.fn("Organizations.setLimits")(function*(uuid, limits) {
          const entry = yield* find(uuid)
          yield* validLimits(limits)
          return yield* update(entry, {
            perMinute: limits.perMinute ?? entry.org.perMinute,
            perWeek: limits.perWeek ?? entry.org.perWeek
          })
        }),
        secretOf: (uuid) => Effect.map(find(uuid), (e) => ({ org: e.org, secret: Redacted.make(e.secret) }))
      })
    })
  )
}

interface ReadOrg extends Request.Request<OrgRow | undefined> {
  readonly _tag: "ReadOrg"
  readonly uuid: string
}
const ReadOrg = Request.tagged<ReadOrg>("ReadOrg")

interface SecretOf {
  readonly org: Organization
  readonly secret: Redacted.Redacted<string>
}

/**
 * Opened secrets are kept a while (bounded), so a secret does not live in memory long after its
 * use; like the gateway's key cache TTL, this is what a lost invalidation could leave stale.
 */
const OPENED_TTL_MILLIS = 30_000
const OPENED_SWEEP_MILLIS = 5_000
const OPENED_MAX = 10_000
