import { Effect, Exit, Scope } from "effect"
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { throwawayDatabase } from "../support/database.ts"
import { type FeedMirror, feedMirror, mirrorConfig } from "../support/feedMirror.ts"
import { baseEnv, tempDataDir, VDB } from "../support/processes.ts"

/**
 * Runs `bin/vdb` on a pseudo-terminal (util-linux `script`), so its standard
 * streams are a TTY as in a user's shell; returns what the terminal received.
 */
const onTerminal = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<{ code: number | null; text: string }>((resolve, reject) => {
    const quoted = [VDB, ...args].map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(" ")
    const child = spawn("script", ["-qec", quoted, "/dev/null"], { env, stdio: ["ignore", "pipe", "pipe"] })
    const chunks: Array<Buffer> = []
    child.stdout.on("data", (c: Buffer) => chunks.push(c))
    child.stderr.on("data", (c: Buffer) => chunks.push(c))
    child.once("error", reject)
    child.once("close", (code) => resolve({ code, text: Buffer.concat(chunks).toString("utf8") }))
  })

/**
 * The lines a terminal shows once `text` is written to it: carriage return,
 * line feed (the terminal's own `\r` comes with it: the pty adds it), erase
 * to the end of the line (`ESC [K`) and cursor up (`ESC [nA`), which is all
 * the progress view uses. Other escapes are passed over.
 */
const screen = (text: string) => {
  const rows = [""]
  let row = 0
  let col = 0

  for (const [token, count, code] of text.matchAll(/\x1b\[(\d*)([A-Za-z])|\r|\n|[^\x1b\r\n]+/g)) {
    if (token === "\r") col = 0
    else if (token === "\n") rows[++row] ??= ""
    else if (code === "A") row = Math.max(0, row - Number(count === "" ? 1 : count))
    else if (code === "K") rows[row] = rows[row]!.slice(0, col)
    else if (code === undefined) {
      const line = rows[row]!.padEnd(col)
      rows[row] = line.slice(0, col) + token + line.slice(col + token.length)
      col += token.length
    }
  }
  return rows.filter((r) => r.trim() !== "")
}

describe("vdb sync on a terminal", () => {
  const scope = Effect.runSync(Scope.make())
  let mirror: FeedMirror
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))
  beforeAll(async () => {
    mirror = await Effect.runPromise(Scope.provide(feedMirror, scope))
  })

  it("draws one line per source, redrawn in place while records arrive, ending as each source ended", async () => {
    const db = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
    const env = {
      ...baseEnv(),
      ...mirrorConfig(mirror),
      DATABASE_URL: db.url,
      VDB_MASTER_KEY: randomBytes(32).toString("base64"),
      VDB_DATA_DIR: tempDataDir(),
      VDB_LOG_LEVEL: "Warn"
    }
    const run = await onTerminal(["sync", "cisa-kev", "epss"], env)
    expect(run.code, run.text).toBe(0)
    // Redrawn, not appended: back to the line start, erase, and up to the first of the two lines.
    expect(run.text).toContain("\r\x1b[K")
    expect(run.text).toContain("\x1b[1A")
    expect(run.text).toMatch(/cisa-kev {2}fetching…/)
    expect(run.text).toMatch(/cisa-kev {2}\[=*> *\] 44 records/)
    expect(run.text).toMatch(/epss {6}waiting/)
    // What stays on the screen: each source's outcome on its own line, nothing else (no plain lines as off a TTY).
    expect(screen(run.text)).toEqual([
      expect.stringMatching(/^cisa-kev {2}updated, 44 changed, 0 failed; next run \d{4}-\d\d-\d\dT\S+$/),
      expect.stringMatching(/^epss {6}updated, \d+ changed, 0 failed; next run \d{4}-\d\d-\d\dT\S+$/)
    ])
  }, 120_000)
})
