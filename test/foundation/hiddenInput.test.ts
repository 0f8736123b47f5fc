import { spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { baseEnv, runVdb, tempDataDir, VDB } from "../support/processes.ts"

/**
 * A secret typed or pasted at a terminal (`member create`'s password, `provider-key set`'s key) is
 * read with the echo off. `script` gives the command a real pseudo-terminal; what the terminal
 * shows is the command's output through it, so an echoed secret would be there.
 */

const SCRIPT = "/usr/bin/script"

/** Runs `args` on a pseudo-terminal; once `prompt` shows, types `keys`. Everything the terminal showed. */
const atTerminal = (args: ReadonlyArray<string>, env: Record<string, string>, prompt: RegExp, keys: string) =>
  new Promise<{ code: number | null; shown: string }>((resolve, reject) => {
    const command = [VDB, ...args].map((arg) => `'${arg.replace(/'/g, "'\\''")}'`).join(" ")
    const child = spawn(SCRIPT, ["-qfec", command, "/dev/null"], { env: { ...baseEnv(), ...env } })
    let shown = ""
    let typed = false
    const take = (chunk: Buffer) => {
      shown += chunk.toString("utf8")
      // Typed only once the command reads: earlier keys would meet the terminal's own echo.
      if (!typed && prompt.test(shown)) {
        typed = true
        child.stdin.write(keys)
      }
    }
    child.stdout.on("data", take)
    child.stderr.on("data", take)
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, shown }))
  })

describe.runIf(existsSync(SCRIPT))("secrets typed at a terminal are not shown", () => {
  it("member create's password (Enter ends it) and provider-key set's key (Ctrl-D ends it)", async () => {
    const env = { VDB_DATA_DIR: tempDataDir() }
    const org = JSON.parse((await runVdb(["org", "create", "--name", "tty", "--json"], env)).stdout) as { uuid: string }

    const password = "correct-horse-battery-staple"
    const member = await atTerminal(
      ["member", "create", "--org", org.uuid, "--email", "tty@example.com", "--json"],
      env,
      /password/i,
      // A typo erased with Backspace; the Ctrl-D after Enter is never read (Enter ends a password).
      `${password}x\x7f\r\x04`
    )
    expect(member.code, member.shown).toBe(0)
    expect(member.shown).toContain("\"email\": \"tty@example.com\"")
    expect(member.shown).not.toContain("correct-horse")

    const key = "sk-typed-at-a-terminal-0123456789"
    const set = await atTerminal(
      ["gateway", "provider-key", "set", "--org", org.uuid, "--provider", "openai"],
      env,
      /provider key/i,
      `${key}\r\x04`
    )
    expect(set.code, set.shown).toBe(0)
    expect(set.shown).not.toContain("sk-typed")
    const list = await runVdb(["gateway", "provider-key", "list", "--org", org.uuid, "--json"], env)
    expect(list.stdout).toContain("openai")
  }, 60_000)
})
