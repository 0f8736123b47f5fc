import { spawn } from "node:child_process"
import { setTimeout as sleep } from "node:timers/promises"
import { describe, expect, it } from "vitest"
import { baseEnv, tempDataDir, VDB } from "../support/processes.ts"

/**
 * A command interrupted by Ctrl-C did not finish, and says so: exit 130 and one line. `vdb ingest`
 * exited 0 without a word, so `vdb ingest … && next` went on after a partial run. (`serve` stopping
 * on a signal is a clean exit, covered with the server's shutdown.)
 */
describe("bin/vdb ingest interrupted", () => {
  it("exits 130 with one line saying what was kept and how to resume", async () => {
    // Reading standard input that never ends: the command is under way whenever the signal comes.
    const child = spawn(VDB, ["ingest", "osv", "-"], {
      env: { ...baseEnv(), VDB_DATA_DIR: tempDataDir() },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stderr = ""
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
    child.stdin.write(`{"id":"GO-2024-0001","modified":"2024-01-01T00:00:00Z","aliases":[]}\n`)
    // Long enough for the runtime's signal handlers (installed as it starts) to be in place.
    await sleep(3000)
    child.kill("SIGINT")
    expect(await exited).toBe(130)
    const lines = stderr.split("\n").filter((line) => line !== "" && !line.startsWith("{"))
    expect(lines).toEqual(["vdb: interrupted: the items already stored are kept; run the same command again to resume"])
  }, 60_000)
})
