import { Effect, Schedule, Schema } from "effect"
import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs"
import { dirname } from "node:path"

export class DataDirLocked extends Schema.TaggedError<DataDirLocked>()("DataDirLocked", {
  path: Schema.String,
  pid: Schema.Number
}) {
  override get message() {
    return `the embedded database is in use by process ${this.pid} (lock ${this.path}); ` +
      `stop it, or run vdb commands while it serves (they then go through its admin socket)`
  }
}

/**
 * When the process started (clock ticks since boot, `/proc/PID/stat` field 22), or
 * undefined where there is no procfs. Pids are reused: after a crash, the next
 * server in a container often gets the very pid the dead one wrote.
 */
const startTime = (pid: number): string | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]
  } catch {
    return undefined
  }
}

/** A process with this pid runs (EPERM: it runs, as another user). */
export const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** The lock's holder is still the process that wrote it (same pid, and same start time when both are known). */
const holds = (pid: number, started: string | undefined) => {
  if (!alive(pid)) return false
  if (started === undefined) return true
  const now = startTime(pid)
  return now === undefined || now === started
}

const tryLock = (path: string): Effect.Effect<void, DataDirLocked> =>
  Effect.suspend(() => {
    try {
      mkdirSync(dirname(path), { recursive: true })
      const fd = openSync(path, "wx", 0o600)
      writeSync(fd, [process.pid, startTime(process.pid)].filter((x) => x !== undefined).join(" "))
      closeSync(fd)
      return Effect.void
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") return Effect.die(e)
      const [pidText, started] = readFileSync(path, "utf8").trim().split(" ")
      const pid = Number(pidText)
      if (!Number.isInteger(pid) || pid <= 0 || !holds(pid, started)) {
        unlinkSync(path)
        return tryLock(path)
      }
      return Effect.fail(new DataDirLocked({ path, pid }))
    }
  })

/**
 * PGlite admits one process per data directory, and a second one silently
 * corrupts it, so the embedded database is guarded by a lock file holding the
 * pid and start time. A holder that died (`kill -9`) leaves a stale lock,
 * which is taken over, also when a new process got the dead one's pid. A live holder is
 * waited for (it may be a CLI command about to finish), then refused.
 */
export const lockDataDir = (path: string) =>
  // The wait is outside the (uninterruptible) acquisition, so Ctrl-C or a
  // timeout ends it at once; each attempt either takes the lock or takes nothing.
  Effect.acquireRelease(
    tryLock(path),
    () =>
      Effect.sync(() => {
        try {
          if (readFileSync(path, "utf8").trim().split(" ")[0] === String(process.pid)) unlinkSync(path)
        } catch {
          // already gone
        }
      })
  ).pipe(Effect.retry(Schedule.spaced("200 millis").pipe(Schedule.upTo({ duration: "15 seconds" }))))
