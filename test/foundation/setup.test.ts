import { execFile } from "node:child_process"
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { ROOT } from "../support/processes.ts"

/**
 * `bin/setup` (what `make setup`, `make start` and `make test` run first) in a copy of its own, with a
 * stand-in `npm` that takes two seconds and records its calls: what the user sees while the
 * dependencies install, and two set-ups started together.
 */
const sandbox = () => {
  const root = mkdtempSync(join(tmpdir(), "vdb-setup-"))
  mkdirSync(join(root, "bin"))
  copyFileSync(join(ROOT, "bin/setup"), join(root, "bin/setup"))
  writeFileSync(join(root, "package-lock.json"), "{}\n")
  // The embedded-cluster step imports this file; here it has nothing to make.
  mkdirSync(join(root, "src/db"), { recursive: true })
  writeFileSync(join(root, "src/db/PgliteTemplate.ts"), "export const ensureTemplate = async () => true\n")
  // This Node (>= 22), and an npm that stands in for `npm ci`, on the PATH the script sees first.
  const nodeBin = join(root, "node-home/bin")
  mkdirSync(nodeBin, { recursive: true })
  symlinkSync(process.execPath, join(nodeBin, "node"))
  const calls = join(root, "npm-calls")
  writeFileSync(join(nodeBin, "npm"), `#!/bin/sh\necho "$*" >> "${calls}"\nsleep 2\nmkdir -p node_modules\n`)
  chmodSync(join(nodeBin, "npm"), 0o755)
  return { root, nodeBin, calls }
}

const runSetup = (root: string, nodeBin: string) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(
      join(root, "bin/setup"),
      [],
      { env: { PATH: `${nodeBin}:/usr/bin:/bin`, HOME: root }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : (error as { code?: number }).code ?? 1, stdout, stderr })
    )
  })

describe("bin/setup", () => {
  it(
    "says what it installs and that the first install takes minutes, on stderr; stdout is only the environment",
    async () => {
      const { calls, nodeBin, root } = sandbox()
      const run = await runSetup(root, nodeBin)
      expect(run.code, run.stderr).toBe(0)
      // `make setup` sends stdout to /dev/null and `eval "$(bin/setup)"` evaluates it: the messages are on stderr.
      expect(run.stdout).toBe(`export PATH="${join(root, "node-home")}/bin:$PATH"\n`)
      // Before: "setup: installing dependencies (npm ci)", then minutes of silence while re2 compiled.
      expect(run.stderr).toContain(
        "setup: installing dependencies (npm ci); the first install compiles re2 from source and takes a few minutes"
      )
      expect(run.stderr).toMatch(/setup: dependencies installed in \d+ s/)
      expect(readFileSync(calls, "utf8")).toBe("ci\n")
      // Installed: the next run installs nothing and says nothing.
      const again = await runSetup(root, nodeBin)
      expect(again.code).toBe(0)
      expect(again.stderr).toBe("")
      expect(readFileSync(calls, "utf8")).toBe("ci\n")
    },
    60_000
  )

  it("two set-ups at once install once: the second waits for the first", async () => {
    const { calls, nodeBin, root } = sandbox()
    // Before: both ran `npm ci`, each deleting node_modules under the other (both failed, node_modules empty).
    const runs = await Promise.all([runSetup(root, nodeBin), runSetup(root, nodeBin)])
    for (const run of runs) expect(run.code, run.stderr).toBe(0)
    expect(readFileSync(calls, "utf8")).toBe("ci\n")
    expect(runs.filter((r) => r.stderr.includes("another set-up is installing the dependencies; waiting for it")))
      .toHaveLength(1)
  }, 60_000)
})
