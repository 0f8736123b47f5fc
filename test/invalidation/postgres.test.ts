import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { PgConnection } from "@effect/sql-pg"
import { layerPostgres } from "../../src/db/Database.ts"
import { type Invalidated, Invalidation, NOTIFY_CHANNEL } from "../../src/db/Invalidation.ts"
import { adminQuery, throwawayDatabase } from "../support/database.ts"

/** The bus of one "process": its own pool and LISTEN session on the shared database. */
const processBus = (url: string) =>
  Effect.map(
    Layer.build(layerPostgres(Redacted.make(url), 1).pipe(Layer.orDie)),
    (context) => Context.get(context, Invalidation)
  )

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

describe("the PostgreSQL invalidation bus (LISTEN/NOTIFY)", () => {
  layer(Layer.empty, { excludeTestServices: true, timeout: 30_000 })((it) => {
    it.effect("a publish reaches every process once, the publisher first; foreign payloads are ignored", () =>
      Effect.gen(function*() {
        const db = yield* throwawayDatabase
        const a = yield* processBus(db.url)
        const b = yield* processBus(db.url)
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
        const db = yield* throwawayDatabase
        const a = yield* processBus(db.url)
        const b = yield* processBus(db.url)
        const c = yield* processBus(db.url)
        // Busy processes: each takes its time to evict, as one under load reads its session late.
        const evicted: Array<string> = []
        for (const [name, bus] of [["b", b], ["c", c]] as const) {
          yield* bus.subscribe("organization", (event) =>
            Effect.andThen(Effect.sleep("300 millis"), Effect.sync(() => void evicted.push(`${name}:${event._tag === "Key" ? event.key : "*"}`))))
        }
        yield* a.publish("organization", "org-1")
        assert.deepStrictEqual([...evicted].sort(), ["b:org-1", "c:org-1"])
        yield* c.publish("organization", "org-2")
        assert.include(evicted, "b:org-2")
      }).pipe(Effect.scoped))

    it.effect("a process that never confirms holds a publish up for a bounded time only", () =>
      Effect.gen(function*() {
        const db = yield* throwawayDatabase
        const a = yield* processBus(db.url)
        // A session named like a listener that never answers (a stopped process).
        yield* PgConnection.make({ url: Redacted.make(db.url), applicationName: "vdb-invalidation" })
        const published = yield* Effect.exit(a.publish("organization", "org-1"))
        assert.strictEqual(published._tag, "Success")
      }).pipe(Effect.scoped))
  })
})
