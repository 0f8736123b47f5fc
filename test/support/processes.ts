import { type ChildProcess, execFile, spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

export const ROOT = resolve(import.meta.dirname, "../..")
export const VDB = join(ROOT, "bin/vdb")

export interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs `bin/vdb` as a user would, with a controlled environment. */
export const runVdb = (args: ReadonlyArray<string>, env: Record<string, string>, input?: string): Promise<Run> =>
  new Promise((resolvePromise) => {
    const child = execFile(
      VDB,
      [...args],
      { env: { ...baseEnv(), ...env }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolvePromise({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr })
    )
    if (input !== undefined) child.stdin?.end(input)
    else child.stdin?.end()
  })

/**
 * What a child process inherits: only the path and a home; the rest of the environment is the test's.
 * Metrics are off (their default port, 9464, is one for every server); test/server/metrics.test.ts turns them on.
 * The feeds' schedule is off (it would reach the publishers); test/feeds/schedule.test.ts turns it on against a mirror.
 */
export const baseEnv = () => ({
  PATH: process.env.PATH ?? "",
  HOME: process.env.HOME ?? "/tmp",
  VDB_METRICS: "off",
  VDB_SYNC: "off"
})

export const tempDataDir = () => join(mkdtempSync(join(tmpdir(), "vdb-data-")), "data")

/**
 * Ports below Linux's ephemeral range (`ip_local_port_range`, 32768–60999 by default). A port the
 * kernel picked (`listen(0)`) comes from that range, and between the check and the server's bind
 * any outgoing connection (to PostgreSQL, say) could take it as its local port: a server then
 * failed to start with "address already in use". Below the range only a listener can take it.
 */
const PORT_LOW = 10_000
const PORT_HIGH = 32_000
/** Handed out by this process already (a port checked free is free again once the check closes). */
const handedOut = new Set<number>()

const canListen = (port: number) =>
  new Promise<boolean>((resolvePromise) => {
    const server = createServer()
    server.once("error", () => resolvePromise(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolvePromise(true)))
  })

export const freePort = async (): Promise<number> => {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = PORT_LOW + Math.floor(Math.random() * (PORT_HIGH - PORT_LOW))
    if (handedOut.has(port) || !(await canListen(port))) continue
    handedOut.add(port)
    return port
  }
  throw new Error(`no free loopback port between ${PORT_LOW} and ${PORT_HIGH}`)
}

export interface RunningServer {
  readonly ports: { readonly api: number; readonly gateway: number; readonly site: number; readonly mcp: number }
  readonly env: Record<string, string>
  readonly child: ChildProcess
  readonly output: () => { stdout: string; stderr: string }
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/**
 * Starts `bin/vdb serve` on free loopback ports and waits until every service is ready. Another
 * test process can still take a port between the check and the bind: then it starts again on
 * other ports.
 */
export const startServer = async (
  env: Record<string, string>,
  services: ReadonlyArray<string> = []
): Promise<RunningServer> => {
  for (let attempt = 1;; attempt++) {
    try {
      return await startServerOnce(env, services)
    } catch (error) {
      if (attempt >= 3 || !String(error).includes("address already in use")) throw error
    }
  }
}

const startServerOnce = async (env: Record<string, string>, services: ReadonlyArray<string>) => {
  const ports = { api: await freePort(), gateway: await freePort(), site: await freePort(), mcp: await freePort() }
  const fullEnv = {
    ...env,
    VDB_API_PORT: String(ports.api),
    VDB_GATEWAY_PORT: String(ports.gateway),
    VDB_SITE_PORT: String(ports.site),
    VDB_MCP_PORT: String(ports.mcp)
  }
  const child = spawn(VDB, ["serve", ...services], {
    env: { ...baseEnv(), ...fullEnv },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (d) => (stdout += d))
  child.stderr.on("data", (d) => (stderr += d))
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)))
  const wanted = services.length === 0 ? Object.values(ports) : services.map((s) => ports[s as keyof typeof ports])
  const deadline = Date.now() + 60_000
  for (const port of wanted) {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`server exited early (${child.exitCode}): ${stderr}`)
      if (Date.now() > deadline) throw new Error(`server not ready: ${stderr}`)
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false)
      if (ok) break
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  const server: RunningServer = {
    ports,
    env: fullEnv,
    child,
    output: () => ({ stdout, stderr }),
    stop: (signal = "SIGTERM") => {
      if (child.exitCode === null) child.kill(signal)
      return exited
    }
  }
  return server
}
