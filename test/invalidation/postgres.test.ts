import { PgConnection } from "@effect/sql-pg"
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Logger, Metric, Redacted } from "effect"
import { layerPostgres } from "../../src/db/Database.ts"
import { Invalidation } from "../../src/db/Invalidation.ts"
import type { Invalidated } from "../../src/db/InvalidationBus.ts"
import { NOTIFY_CHANNEL, reconnectDelay } from "../../src/db/PostgresInvalidationBus.ts"
import { adminQuery, throwawayDatabase } from "../support/database.ts"

/** The bus of one "process": its own pool and LISTEN session on the shared database. */
const processBus = (url: string) =>
  Effect.map(
    Layer.build(layerPostgres(Redacted.make(url), 1).pipe(Layer.orDie)),
    (context) => Context.get(context, Invalidation)
  )

type Bus = Context.Service.Shape<typeof Invalidation>
type Buses = readonly [Bus, Bus, Bus]

/** `count` (at most 3) processes' buses on one throwaway database. */
const processes = (count: number) =>
  Effect.flatMap(throwawayDatabase, (db) =>
    Effect.map(
      Effect.forEach(Array.from({ length: count }), () => processBus(db.url)),
      // A tuple of `count` buses: the tests name each process's bus.
      (buses) => ({ db, buses: buses as unknown as Buses })
    ))

const recorder = Effect.fnUntraced(function*(bus: Context.Service.Shape<typeof Invalidation>) {
  const seen: Array<Invalidated> = []
  yield* bus.subscribe("organization", (event) => Effect.sync(() => void seen.push(event)))
  return seen
})

const waitFor = (check: () => boolean, limitMs = 2000) =>
  Effect.gen(function*() {
    const start = Date.now()
    while (!check()) {
      if (Date.now() - start > limitMs) return assert.fail(`not within ${limitMs} ms`)
      yield* Effect.sleep("10 millis")
    }
  })

/** A series' count (histogram) or value (counter) in this process's metrics, 0 before its first update. */
const seriesValue = (id: string, attributes: Record<string, string> = {}) =>
  Effect.map(Metric.snapshot, (snapshots) => {
    const found = snapshots.find((s) =>
      s.id === id && Object.entries(attributes).every(([key, value]) => s.attributes?.[key] === value)
    )
    const state = found?.state as { readonly count?: number } | undefined
    return state?.count ?? 0
  })

describe("reconnecting the listening session", () => {
  it("waits 200 ms, doubling to 10 s while it cannot connect, and 200 ms again after a session that listened is lost", () => {
    const waits: Array<number> = []
    let delay: number | undefined
    for (const listened of [false, false, false, false, false, false, false, false, true, true, false]) {
      delay = reconnectDelay(delay, listened)
      waits.push(delay)
    }
    assert.deepStrictEqual(waits, [200, 400, 800, 1600, 3200, 6400, 10_000, 10_000, 200, 200, 400])
  })
})

describe("the PostgreSQL invalidation bus (LISTEN/NOTIFY)", () => {
  layer(Layer.empty, { excludeTestServices: true, timeout: 30_000 })((it) => {
    it.effect("a publish reaches every process once, the publisher first; foreign payloads are ignored", () =>
      Effect.gen(function*() {
        const { buses: [a, b], db } = yield* processes(2)
        const seenA = yield* recorder(a)
        const seenB = yield* recorder(b)

        yield* a.publish("organization", "org-1")
        // The publisher's own subscribers ran before publish returned.
        assert.deepStrictEqual(seenA, [{ _tag: "Key", key: "org-1" }])
        yield* waitFor(() => seenB.length > 0)

        // Unknown channels and malformed payloads on the PostgreSQL channel change nothing.
        yield* adminQuery(db.url, `SELECT pg_notify('${NOTIFY_CHANNEL}', 'someone\tno-such-channel\tx')`)
        yield* adminQuery(db.url, `SELECT pg_notify('${NOTIFY_CHANNEL}', 'garbage')`)
        yield* b.publish("organization", "org-2")
        yield* waitFor(() => seenA.length > 1)
        yield* Effect.sleep("100 millis")
        assert.deepStrictEqual(seenA, [{ _tag: "Key", key: "org-1" }, { _tag: "Key", key: "org-2" }])
        assert.deepStrictEqual(seenB, [{ _tag: "Key", key: "org-1" }, { _tag: "Key", key: "org-2" }])
      }).pipe(Effect.scoped))

    it.effect("a publish returns once every other process has evicted: the change is in force everywhere", () =>
      Effect.gen(function*() {
        const { buses: [a, b, c] } = yield* processes(3)
        // Busy processes: each takes its time to evict, as one under load reads its session late.
        const evicted: Array<string> = []
        for (const [name, bus] of [["b", b], ["c", c]] as const) {
          yield* bus.subscribe(
            "organization",
            (event) =>
              Effect.andThen(
                Effect.sleep("300 millis"),
                Effect.sync(() => void evicted.push(`${name}:${event._tag === "Key" ? event.key : "*"}`))
              )
          )
        }
        const roundTrips = yield* seriesValue("vdb_invalidation_round_trip_seconds")
        yield* a.publish("organization", "org-1")
        assert.deepStrictEqual([...evicted].sort(), ["b:org-1", "c:org-1"])
        yield* c.publish("organization", "org-2")
        assert.include(evicted, "b:org-2")
        // Each publish that waited for the others is one round trip in /metrics.
        assert.strictEqual((yield* seriesValue("vdb_invalidation_round_trip_seconds")) - roundTrips, 2)
      }).pipe(Effect.scoped))

    it.effect("a process that never confirms holds up one publish for a bounded time, not every one after", () =>
      Effect.gen(function*() {
        const warnings: Array<string> = []
        const { buses: [a], db } = yield* processes(1)
        const unconfirmed = yield* seriesValue("vdb_invalidation_lost_total", { reason: "unconfirmed" })
        // A session named like a listener that never answers (a stopped process).
        yield* PgConnection.make({ url: Redacted.make(db.url), applicationName: "vdb-invalidation" })
        for (const key of ["org-1", "org-2", "org-3"]) {
          const published = yield* Effect.exit(a.publish("organization", key)).pipe(
            Effect.provide(Logger.layer([Logger.make(({ logLevel, message }) => {
              if (logLevel === "Warn") warnings.push(String(message))
            })]))
          )
          assert.strictEqual(published._tag, "Success")
        }
        // The first publish waited for it and gave up; the later ones did not wait again.
        assert.strictEqual(warnings.filter((w) => w.includes("did not confirm")).length, 1)
        assert.strictEqual(
          (yield* seriesValue("vdb_invalidation_lost_total", { reason: "unconfirmed" })) - unconfirmed,
          1
        )
      }).pipe(Effect.scoped))

    it.effect("a key holding TABs and newlines reaches the other processes whole", () =>
      Effect.gen(function*() {
        const { buses: [a, b] } = yield* processes(2)
        const seenB = yield* recorder(b)
        const key = "GO-2024-0001\nCVE-2000-0001\tX\nCVE-2021-44228"
        yield* a.publish("organization", key)
        assert.deepStrictEqual(seenB, [{ _tag: "Key", key }])
      }).pipe(Effect.scoped))
  })
})
