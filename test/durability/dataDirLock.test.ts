import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { lockDataDir } from "../../src/db/DataDirLock.ts"

const lockPath = () => join(mkdtempSync(join(tmpdir(), "vdb-lock-")), "pglite.lock")

/** This process's start time as the lock records it (`/proc/self/stat` field 22). */
const ownStart = () => {
  const stat = readFileSync("/proc/self/stat", "utf8")
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]!
}

describe("the embedded database's lock after a crash", () => {
  it.live("takes over a lock whose pid now belongs to another process (pid reuse after kill -9)", () =>
    Effect.gen(function*() {
      const path = lockPath()
      // A server that died under `kill -9` wrote this pid; a new process (here: this one) got the same pid.
      writeFileSync(path, `${process.pid} 1`)
      yield* Effect.scoped(Effect.gen(function*() {
        yield* lockDataDir(path).pipe(Effect.timeout("2 seconds"))
        assert.strictEqual(readFileSync(path, "utf8"), `${process.pid} ${ownStart()}`)
      }))
    }))

  it.live("takes over the lock of a dead process, in the older pid-only form too", () =>
    Effect.gen(function*() {
      const path = lockPath()
      writeFileSync(path, "999999999")
      yield* Effect.scoped(lockDataDir(path).pipe(Effect.timeout("2 seconds")))
    }))

  it.live("waits while the process that wrote the lock still runs", () =>
    Effect.gen(function*() {
      const path = lockPath()
      const held = `${process.pid} ${ownStart()}`
      writeFileSync(path, held)
      const exit = yield* Effect.exit(Effect.scoped(lockDataDir(path).pipe(Effect.timeoutOption("1 second"))))
      assert.isTrue(Exit.isSuccess(exit) && Option.isNone(exit.value))
      assert.strictEqual(readFileSync(path, "utf8"), held)
    }))
})
