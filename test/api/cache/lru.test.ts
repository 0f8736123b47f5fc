import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { MAX_AGE_MILLIS, ResponseCache } from "../../../src/api/ResponseCache.ts"
import { touchedMessages } from "../../../src/vulns/TouchedRecords.ts"

const built = (value: string, dependsOn: ReadonlyArray<string> = []) =>
  Effect.succeed({ value, bytes: 1000, dependsOn })

describe("ResponseCache", () => {
  it.effect("keeps at most its byte budget, least recently used out first", () =>
    Effect.gen(function*() {
      const { service: cache } = yield* ResponseCache.make(5_000)
      for (const key of ["a", "b", "c"]) assert.isFalse((yield* cache.serve(key, built(key))).hit)
      assert.isTrue((yield* cache.serve("a", built("a"))).hit)
      // d pushes the total over 5,000 (1,000 + overhead each): b, the least recently used, goes.
      yield* cache.serve("d", built("d"))
      assert.isAtMost(cache.stats().bytes, 5_000)
      assert.strictEqual(cache.stats().entries, 3)
      assert.isFalse((yield* cache.serve("b", built("b"))).hit)
      assert.isTrue((yield* cache.serve("d", built("d"))).hit)
      // An entry that grows past the budget pushes others out, never the total over it.
      cache.grew("d", 2_500)
      assert.isAtMost(cache.stats().bytes, 5_000)
    }))

  it.effect("an answer larger than the budget is served, not kept; a budget of 0 keeps nothing", () =>
    Effect.gen(function*() {
      const { service: small } = yield* ResponseCache.make(500)
      assert.isFalse((yield* small.serve("a", built("a"))).hit)
      assert.isFalse((yield* small.serve("a", built("a"))).hit)
      const { service: off } = yield* ResponseCache.make(0)
      yield* off.serve("a", Effect.succeed({ value: "a", bytes: 0, dependsOn: [] }))
      assert.strictEqual(off.stats().entries, 0)
    }))

  it.effect("evicts by dependency, case-insensitively; a flush drops everything", () =>
    Effect.gen(function*() {
      const { evict, onBus, service: cache } = yield* ResponseCache.make(1_000_000)
      yield* cache.serve("vuln CVE-1", built("1", ["CVE-1", "GHSA-abcd-efgh-ijkl"]))
      yield* cache.serve("vuln CVE-2", built("2", ["CVE-2"]))
      evict(["ghsa-ABCD-efgh-ijkl"])
      assert.isFalse((yield* cache.serve("vuln CVE-1", built("1", ["CVE-1"]))).hit)
      assert.isTrue((yield* cache.serve("vuln CVE-2", built("2", ["CVE-2"]))).hit)
      yield* onBus({ _tag: "Key", key: "*" })
      assert.strictEqual(cache.stats().entries, 0)
      yield* cache.serve("vuln CVE-2", built("2", ["CVE-2"]))
      yield* onBus({ _tag: "All" })
      assert.strictEqual(cache.stats().entries, 0)
    }))

  it.effect("a build that overlapped an invalidation is served but not kept", () =>
    Effect.gen(function*() {
      const { evict, service: cache } = yield* ResponseCache.make(1_000_000)
      const gate = yield* Deferred.make<void>()
      const building = yield* cache.serve(
        "k",
        Effect.as(Deferred.await(gate), { value: "old", bytes: 10, dependsOn: ["CVE-9"] })
      )
        .pipe(Effect.forkChild)
      yield* Effect.yieldNow
      evict(["CVE-9"])
      yield* Deferred.succeed(gate, undefined)
      assert.strictEqual((yield* Fiber.join(building)).value, "old")
      assert.isFalse((yield* cache.serve("k", built("new"))).hit)
      assert.isTrue((yield* cache.serve("k", built("newer"))).hit)
    }))
})

describe("vuln-records messages", () => {
  it("fit a NOTIFY payload; a batch's identifiers go one by one, only a whole-store write becomes one flush", () => {
    const ids = Array.from({ length: 3_000 }, (_, n) => `GHSA-${String(n).padStart(4, "0")}-abcd-efgh`)
    const messages = touchedMessages(ids)
    assert.isAbove(messages.length, 1)
    for (const m of messages) assert.isBelow(Buffer.byteLength(m), 7_600)
    assert.deepStrictEqual(messages.flatMap((m) => m.split("\n")).sort(), ids.map((i) => i.toUpperCase()).sort())
    // A whole ingest batch's identifiers are sent one by one (a flush would empty every reader's cache per batch).
    const batch = touchedMessages(Array.from({ length: 20_000 }, (_, n) => `CVE-2024-${n}`))
    assert.isAbove(batch.length, 20)
    assert.notInclude(batch, "*")
    assert.strictEqual(batch.flatMap((m) => m.split("\n")).length, 20_000)
    assert.deepStrictEqual(touchedMessages(Array.from({ length: 100_001 }, (_, n) => `CVE-2024-${n}`)), ["*"])
    assert.deepStrictEqual(touchedMessages([]), [])
  })
})

describe("ResponseCache age", () => {
  it.effect("an entry past the maximum age is dropped by the sweep (the fallback for a lost notification)", () =>
    Effect.gen(function*() {
      const { service: cache, sweep } = yield* ResponseCache.make(1_000_000)
      yield* cache.serve("old", built("old"))
      yield* TestClock.adjust(MAX_AGE_MILLIS / 2)
      yield* cache.serve("young", built("young"))
      yield* sweep
      assert.isTrue((yield* cache.serve("old", built("old"))).hit)
      yield* TestClock.adjust(MAX_AGE_MILLIS / 2)
      yield* sweep
      assert.isFalse((yield* cache.serve("old", built("old again"))).hit)
      assert.isTrue((yield* cache.serve("young", built("young"))).hit)
    }))
})
