import { assert, describe, layer, type Vitest } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { DeviceGrants } from "../../src/device/DeviceGrants.ts"
import { PostgresTest } from "../support/database.ts"

/**
 * A token poll racing the approval of its grant (RFC 8628 §3.5): access_denied
 * is final for the client, so a poll must never answer it for a grant that is
 * approved and not yet redeemed; and a grant still yields exactly one key.
 * Live clock: the grants live 900 s, nothing here waits on time.
 */
const timing = { lifetimeSeconds: 900, intervalSeconds: 5 }
const client = { name: "vdb-cli", version: "0.1.0", address: "127.0.0.1" }

describe("DeviceGrants poll racing an approval (postgresql)", () => {
  layer(DeviceGrants.layerWith(timing).pipe(Layer.provideMerge(PostgresTest)), { excludeTestServices: true })((it) => {
    it.effect("a poll blocked behind an approval in flight redeems the grant once the approval commits", () =>
      Effect.gen(function*() {
        const grants = yield* DeviceGrants
        const sql = yield* SqlClient.SqlClient
        const issued = yield* grants.authorize(client)
        const code = Redacted.value(issued.deviceCode)
        const member = randomUUID()
        const locked = yield* Deferred.make<number>()
        const decide = yield* Deferred.make<void>()
        // The approver's transaction locks the row first, so the poll's "mark pending" update waits
        // on it, after the poll's redeeming update has already found the grant unapproved.
        const approver = yield* sql.withTransaction(Effect.gen(function*() {
          const [me] = yield* sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`
          yield* sql`SELECT user_code FROM device_grants WHERE user_code = ${issued.userCode} FOR UPDATE`
          yield* Deferred.succeed(locked, me!.pid)
          yield* Deferred.await(decide)
          return yield* grants.approve(issued.userCode, member)
        })).pipe(Effect.forkChild)
        const approverPid = yield* Deferred.await(locked)
        const poller = yield* grants.poll(code).pipe(Effect.forkChild)
        let blocked = false
        for (let i = 0; i < 2_000 && !blocked; i++) {
          const [waiting] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE ${approverPid}::int = ANY(pg_blocking_pids(pid))`
          blocked = waiting!.n > 0
          if (!blocked) yield* Effect.sleep("2 millis")
        }
        assert.isTrue(blocked, "the poll never waited on the approver's lock")
        yield* Deferred.succeed(decide, undefined)
        assert.strictEqual((yield* Fiber.join(approver)).status, "approved")
        assert.deepStrictEqual(yield* Fiber.join(poller), { _tag: "issued", memberUuid: member })
        assert.strictEqual((yield* grants.poll(code))._tag, "access_denied")
      }))

    pollsDuringApprovals(it, 40)
  })
})

// The in-memory grants decide each poll in one synchronous step: nothing can come in between.
describe("DeviceGrants polls during approvals (memory)", () => {
  layer(DeviceGrants.layerMemoryWith(timing), { excludeTestServices: true })((it) => {
    pollsDuringApprovals(it, 8)
  })
})

/** Approves each of `count` grants while three polls run; PGlite (one session) cannot interleave them, so not here. */
function pollsDuringApprovals(it: Vitest.MethodsNonLive<DeviceGrants>, count: number) {
  it.effect("polls during an approval: no final error for an approved grant, exactly one key per grant", () =>
    Effect.gen(function*() {
      const grants = yield* DeviceGrants
      const wrong: Array<string> = []
      yield* Effect.forEach(Array.from({ length: count }, (_, i) => i), (i) =>
        Effect.gen(function*() {
          const issued = yield* grants.authorize(client)
          const code = Redacted.value(issued.deviceCode)
          const [, ...racing] = yield* Effect.all([
            grants.approve(issued.userCode, randomUUID()),
            ...Array.from({ length: 3 }, () => grants.poll(code))
          ], { concurrency: "unbounded" })
          const tags = racing.map((o) => o._tag)
          // The approval went through: whoever did not get the key polls again and must get it now.
          const after = tags.includes("issued") ? [] : [(yield* grants.poll(code))._tag]
          const keys = [...tags, ...after].filter((t) => t === "issued").length
          if (keys !== 1 || (tags.includes("access_denied") && !tags.includes("issued"))) {
            wrong.push(`grant ${i}: ${tags.join(", ")} then ${after.join(", ") || "-"}`)
          }
        }), { concurrency: 4 })
      assert.deepStrictEqual(wrong, [])
    }))
}
