import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs"
import { dirname } from "node:path"
import { Effect, Schedule, Schema } from "effect"

export class DataDirLocked extends Schema.TaggedError<DataDirLocked>()("DataDirLocked", {
  path: Schema.String,
  pid: Schema.Number
}) {
  override get message() {
    return `the embedded database is in use by process ${this.pid} (lock ${this.path}); ` +
      `stop it, or run vdb commands while it serves (they then go through its admin socket)`
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

const tryLock = (path: string): Effect.Effect<void, DataDirLocked> =>
  Effect.suspend(() => {
    try {
      mkdirSync(dirname(path), { recursive: true })
      const fd = openSync(path, "wx", 0o600)
      writeSync(fd, String(process.pid))
      closeSync(fd)
      return Effect.void
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") return Effect.die(e)
      const pid = Number(readFileSync(path, "utf8").trim())
      if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) {
        unlinkSync(path)
        return tryLock(path)
      }
      return Effect.fail(new DataDirLocked({ path, pid }))
    }
  })

/**
 * PGlite admits one process per data directory, and a second one silently
 * corrupts it, so the embedded database is guarded by a pid lock file. A
 * holder that died leaves a stale lock, which is taken over. A live holder is
 * waited for (it may be a CLI command about to finish), then refused.
 */
export const lockDataDir = (path: string) =>
  Effect.acquireRelease(
    tryLock(path).pipe(Effect.retry(Schedule.spaced("200 millis").pipe(Schedule.upTo({ duration: "15 seconds" })))),
    () => Effect.sync(() => {
      try {
        if (readFileSync(path, "utf8").trim() === String(process.pid)) unlinkSync(path)
      } catch {
        // already gone
      }
    })
  )
