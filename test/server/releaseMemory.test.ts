import { Effect } from "effect"
import { getHeapSpaceStatistics } from "node:v8"
import { describe, expect, it } from "vitest"
import { releaseMemory } from "../../src/runtime/ReleaseMemory.ts"

const newSpaceBytes = () => getHeapSpaceStatistics().find((space) => space.space_name === "new_space")!.space_size

describe("releaseMemory", () => {
  it("shrinks the young generation a burst grew, and the process goes on answering", async () => {
    // A burst of short-lived objects grows the young generation (as an ingest does).
    let keep = 0
    for (let i = 0; i < 200_000; i++) keep += JSON.stringify({ i, text: "x".repeat(64) }).length
    expect(keep).toBeGreaterThan(0)
    const grown = newSpaceBytes()
    await Effect.runPromise(releaseMemory)
    expect(newSpaceBytes()).toBeLessThan(grown)
    // Twice in a row, then the event loop still turns (disconnecting inside the callback hung the process).
    await Effect.runPromise(releaseMemory)
    await new Promise((resolve) => setTimeout(resolve, 10))
    await new Promise((resolve) => setImmediate(resolve))
  })
})
