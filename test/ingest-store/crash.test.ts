import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { throwawayDatabase } from "../support/database.ts"
import { digestDatabase } from "./digest.ts"

const SCRIPT = fileURLToPath(new URL("./ingestData.ts", import.meta.url))
const DATA = fileURLToPath(new URL("../fixtures/data", import.meta.url))

interface ChildRun {
  readonly completed: boolean
  readonly progressSeen: number
  readonly signal: NodeJS.Signals | null
}

/**
 * Runs the ingestion script against `url`; with `killAfter`, sends a real
 * SIGKILL once that many batches have been reported (the next batch is then
 * being written, so the kill lands mid-transaction or between the two phases).
 */
const ingestChild = (url: string, batchSize: number, killAfter?: number) =>
  Effect.callback<ChildRun>((resume) => {
    const child = spawn(process.execPath, [SCRIPT, DATA, String(batchSize)], {
      env: { ...process.env, DATABASE_URL: url },
      stdio: ["ignore", "pipe", "inherit"]
    })
    let buffered = ""
    let progressSeen = 0
    let completed = false
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => {
      buffered += chunk
      let nl: number
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl)
        buffered = buffered.slice(nl + 1)
        if (line.includes("\"_tag\":\"Progress\"")) progressSeen++
        if (line.includes("\"_tag\":\"Summary\"")) completed = true
        if (killAfter !== undefined && progressSeen === killAfter && !child.killed) child.kill("SIGKILL")
      }
    })
    const started = Date.now()
    child.on("close", (_code, signal) => {
      if (process.env.VDB_TEST_TIMING) console.error(`child ${killAfter ?? "full"}: ${Date.now() - started} ms`)
      resume(Effect.succeed({ completed, progressSeen, signal }))
    })
    return Effect.sync(() => child.kill("SIGKILL"))
  })

describe("ingestion killed mid-run", () => {
  it.live("converges to the database a clean run gives", () =>
    Effect.scoped(Effect.gen(function*() {
      const clean = yield* throwawayDatabase
      const cleanRun = yield* ingestChild(clean.url, 200)
      assert.isTrue(cleanRun.completed)
      const expected = yield* digestDatabase(clean.url)
      assert.notStrictEqual(expected.vuln_raw!.split(":")[0], "0")

      const crashed = yield* throwawayDatabase
      const first = yield* ingestChild(crashed.url, 20, 3)
      assert.strictEqual(first.signal, "SIGKILL")
      assert.isFalse(first.completed)
      const partial = yield* digestDatabase(crashed.url)
      assert.notDeepEqual(partial, expected, "the first kill left a partial database")
      const second = yield* ingestChild(crashed.url, 20, 10)
      assert.strictEqual(second.signal, "SIGKILL")
      const last = yield* ingestChild(crashed.url, 20)
      assert.isTrue(last.completed)
      assert.deepStrictEqual(yield* digestDatabase(crashed.url), expected)
    })), { timeout: 180_000 })
})
