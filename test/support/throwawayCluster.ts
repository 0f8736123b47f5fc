import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "./processes.ts"

/**
 * A PostgreSQL cluster of the test's own (initdb, pg_ctl) on a spare loopback port: a fault test
 * stops and starts it without touching the shared server every other test uses. It runs as the
 * `postgres` system user when the test runs as root (initdb refuses root), trust authentication,
 * fsync off (a throwaway). The binaries come from Debian's PostgreSQL packages, as the shared
 * server does.
 */
export interface ThrowawayCluster {
  readonly url: string
  readonly port: number
  stop(): void
  start(): void
  /** Stops it and removes its directory. */
  destroy(): void
}

const binDir = (): string => {
  const root = "/usr/lib/postgresql"
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : []
  const found = versions.map((v) => join(root, v, "bin")).find((dir) => existsSync(join(dir, "initdb")))
  if (found === undefined) throw new Error("initdb not found under /usr/lib/postgresql (Debian's postgresql package)")
  return found
}

export const startThrowawayCluster = async (): Promise<ThrowawayCluster> => {
  const bin = binDir()
  // Under /tmp itself: the suite's own temporary directory is private to this user, and the
  // cluster runs as another.
  const root = mkdtempSync(join(process.getuid?.() === 0 ? "/tmp" : tmpdir(), "vdb-cluster-"))
  // The cluster's user must own the directory and reach it.
  chmodSync(root, 0o777)
  const asRoot = process.getuid?.() === 0
  const run = (tool: string, args: ReadonlyArray<string>) =>
    asRoot
      ? execFileSync("runuser", ["-u", "postgres", "--", join(bin, tool), ...args], { stdio: "pipe", timeout: 60_000 })
      : execFileSync(join(bin, tool), [...args], { stdio: "pipe", timeout: 60_000 })
  const data = join(root, "data")
  run("initdb", ["-D", data, "--auth=trust", "-U", "postgres", "--no-sync", "--no-instructions"])
  const port = await freePort()
  const options =
    `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off`
  const start = () =>
    void run("pg_ctl", ["-D", data, "-o", options, "-l", join(root, "log"), "-w", "-t", "60", "start"])
  const stop = () => void run("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"])
  start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    stop,
    start,
    destroy: () => {
      try {
        stop()
      } catch {
        // already stopped
      }
      rmSync(root, { recursive: true, force: true })
    }
  }
}
