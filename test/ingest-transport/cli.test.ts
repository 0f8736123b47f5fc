import { spawn } from "node:child_process"
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { gzipSync } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, startServer, tempDataDir, VDB } from "../support/processes.ts"

/** `bin/vdb ARGS` in `cwd`, with `input` on standard input (kept open while `hold` is pending). */
const vdb = (
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  options: {
    readonly cwd?: string
    readonly input?: Uint8Array
    readonly hold?: Promise<unknown>
    readonly onStderr?: (stderr: string) => void
  } = {}
) =>
  new Promise<{ code: number | null; stdout: string; stderr: string; ms: number }>((resolve) => {
    const started = Date.now()
    const child = spawn(VDB, [...args], {
      cwd: options.cwd,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => {
      stderr += d
      options.onStderr?.(stderr)
    })
    child.stdin.on("error", () => {})
    if (options.input !== undefined) child.stdin.write(options.input)
    if (options.hold === undefined) child.stdin.end()
    else void options.hold.then(() => child.stdin.end())
    child.on("close", (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }))
  })

const osvLine = (n: number) =>
  JSON.stringify({
    id: `GO-2024-${String(n).padStart(4, "0")}`,
    modified: "2024-01-01T00:00:00Z",
    aliases: [`CVE-2024-${String(n).padStart(4, "0")}`]
  })

const work = mkdtempSync(join(tmpdir(), "vdb-transport-"))
let server: RunningServer | undefined
let env: Record<string, string> = {}

beforeAll(async () => {
  server = await startServer({ VDB_DATA_DIR: tempDataDir() }, ["api"])
  env = server.env
}, 120_000)

afterAll(async () => {
  await server?.stop("SIGKILL")
  rmSync(work, { recursive: true, force: true })
})

describe("bin/vdb ingest with a server running: the CLI reads, the server gets bytes", () => {
  it("reads standard input (-), gzip recognised by its magic bytes", async () => {
    const ndjson = [1, 2, 3].map(osvLine).join("\n")
    const run = await vdb(["ingest", "osv", "-", "--json"], env, { input: gzipSync(ndjson) })
    expect(run.stderr).not.toMatch(/^skipped /m)
    expect(run.code).toBe(0)
    const summary = JSON.parse(run.stdout)
    expect([summary.files, summary.items, summary.inserted, summary.skipped]).toEqual([1, 3, 3, 0])
  }, 60_000)

  it("opens relative paths against the CLI's working directory, not the server's", async () => {
    mkdirSync(join(work, "feed"))
    writeFileSync(join(work, "feed/go.ndjson"), [4, 5].map(osvLine).join("\n"))
    const run = await vdb(["ingest", "osv", "feed", "--json"], env, { cwd: work })
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout).inserted).toBe(2)
    // Problems name the file as the user gave it.
    writeFileSync(join(work, "feed/bad.ndjson"), "{oops\n")
    const bad = await vdb(["ingest", "osv", "feed/bad.ndjson"], env, { cwd: work })
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain("skipped feed/bad.ndjson:1: malformed JSON")
  }, 60_000)

  it("refuses a FIFO, a character device and a process substitution at once, in one line, exit 1", async () => {
    const fifo = join(work, "fifo")
    execFileSync("mkfifo", [fifo])
    for (
      const [path, kind] of [[fifo, "FIFO"], ["/dev/urandom", "character device"], [
        "/dev/zero",
        "character device"
      ]] as const
    ) {
      const run = await vdb(["ingest", "mitre", path], env)
      expect(run.code, path).toBe(1)
      const lines = run.stderr.trim().split("\n")
      expect(lines, path).toHaveLength(1)
      expect(lines[0], path).toContain(`${path} is a ${kind}`)
      // Reading /dev/zero or a FIFO would never end: the test's own timeout is the "at once".
      expect(run.stdout, path).toBe("")
    }
    // bash's <(…) is a pipe under /dev/fd: refused the same way.
    const substituted = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn("bash", ["-c", `exec "${VDB}" ingest mitre <(echo '{}')`], {
        env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stderr = ""
      child.stderr.on("data", (d) => (stderr += d))
      child.on("close", (code) => resolve({ code, stderr }))
    })
    expect(substituted.code).toBe(1)
    expect(substituted.stderr).toMatch(
      /^vdb: \/dev\/fd\/\d+ is a FIFO \(named pipe, or a process substitution like <\(zcat f\)\)/
    )
    // A FIFO inside a directory refuses the whole request too (nothing is sent).
    mkdirSync(join(work, "tree"))
    writeFileSync(join(work, "tree/a.ndjson"), osvLine(9))
    execFileSync("mkfifo", [join(work, "tree/b.ndjson")])
    const tree = await vdb(["ingest", "osv", join(work, "tree")], env)
    expect(tree.code).toBe(1)
    expect(tree.stderr).toContain("tree/b.ndjson is a FIFO")
  }, 60_000)

  const stoppedLine =
    "vdb: the vdb server stopped during the ingest; run the same command again to resume (items already stored are kept and reported unchanged)"

  /** An ingest of standard input kept open, while `stop` ends the server under it. */
  const ingestWhile = async (stop: () => Promise<unknown>, serverEnv: Record<string, string>) => {
    let release = () => {}
    const hold = new Promise<void>((r) => (release = r))
    // Stop the server only once the CLI's upload is under way (its first progress line), however slow the machine.
    let begun = () => {}
    const uploading = new Promise<void>((r) => (begun = r))
    const running = vdb(["ingest", "osv", "-", "--format", "ndjson"], serverEnv, {
      // More than one upload chunk (64 KiB) and one batch (2,000 items), so the server reports progress while standard input stays open.
      input: Buffer.from(Array.from({ length: 4000 }, (_, i) => `${osvLine(10 + i)}\n`).join("")),
      hold,
      onStderr: (stderr) => stderr.includes("{\"progress\"") && begun()
    })
    await uploading
    await stop()
    const run = await running
    release()
    return { code: run.code, lines: run.stderr.trim().split("\n").filter((l) => !l.startsWith("{\"progress\"")) }
  }

  it("says in one line that the server stopped (SIGTERM), and that running again resumes", async () => {
    const other = await startServer({ VDB_DATA_DIR: tempDataDir() }, ["api"])
    try {
      expect(await ingestWhile(() => other.stop("SIGTERM"), other.env)).toEqual({ code: 1, lines: [stoppedLine] })
    } finally {
      await other.stop("SIGKILL")
    }
  }, 90_000)

  it(
    "a CLI killed mid-ingest is no error of the server's: nothing logged at ERROR, and the next ingest runs",
    async () => {
      // The file's server (no other server start): its whole log, the earlier tests' ingests too, must hold no ERROR.
      const other = server!
      for (const signal of ["SIGINT", "SIGKILL"] as const) {
        const child = spawn(VDB, ["ingest", "osv", "-", "--format", "ndjson"], {
          env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...other.env },
          stdio: ["pipe", "ignore", "pipe"]
        })
        child.stdin.on("error", () => {})
        // Input kept open, so the run is under way when the CLI goes.
        child.stdin.write(Array.from({ length: 4000 }, (_, i) => `${osvLine(5000 + i)}\n`).join(""))
        await new Promise<void>((r) =>
          child.stderr.on("data", (d: Buffer) => String(d).includes("{\"progress\"") && r())
        )
        const closed = new Promise((r) => child.on("close", r))
        child.kill(signal)
        if (signal === "SIGINT") setTimeout(() => child.kill("SIGKILL"), 2_000).unref()
        await closed
      }
      // A client whose message passes the admin socket's cap (16 MiB) is cut off; it is still not the server's error.
      {
        const socket = connect(join(other.env.VDB_DATA_DIR!, "admin.sock"))
        socket.on("error", () => {})
        const closed = new Promise((r) => socket.on("close", r))
        socket.write(Buffer.alloc(17 * 1024 * 1024, 0x61))
        await closed
      }
      await new Promise((r) => setTimeout(r, 300))
      const next = await vdb(["ingest", "osv", "-", "--format", "ndjson"], other.env, {
        input: Buffer.from(`${osvLine(9999)}\n`)
      })
      expect(next.code).toBe(0)
      const errors = other.output().stderr.split("\n").filter((line) => line.includes("\"level\":\"ERROR\""))
      expect(errors).toEqual([])
    },
    90_000
  )

  it("says the same when the server is killed (SIGKILL)", async () => {
    expect(await ingestWhile(() => server!.stop("SIGKILL"), env)).toEqual({ code: 1, lines: [stoppedLine] })
  }, 60_000)
})
