import { mkdtempSync, rmSync } from "node:fs"
import { Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ensureMigratedTemplate } from "../../src/db/MigratedTemplate.ts"

/**
 * Fails fast, with the command that fixes it, when the local PostgreSQL is not running. Gives the
 * run one temporary directory: `TMPDIR` points the test processes (forked after this) at it, so the
 * data directories, sockets and browser profiles the tests make with `mkdtemp` are all removed when
 * the run ends. Left in `/tmp` they came to about 0.7 GB a run (PGlite data directories of up to
 * 43 MB each). Makes the migrated empty cluster new embedded databases start from
 * (src/db/MigratedTemplate.ts) once, before the files that create them run side by side.
 */
export default async function setup() {
  const reachable = await new Promise<boolean>((resolve) => {
    const socket = new Socket()
    socket.setTimeout(2000)
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
    socket.once("timeout", () => {
      socket.destroy()
      resolve(false)
    })
    socket.connect(5432, "127.0.0.1")
  })
  if (!reachable) {
    throw new Error(
      "PostgreSQL is not reachable on 127.0.0.1:5432. Start it with: " +
        "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start (make test does this)"
    )
  }
  await ensureMigratedTemplate()
  const root = mkdtempSync(join(tmpdir(), "vdb-test-"))
  process.env.TMPDIR = root
  return () => rmSync(root, { recursive: true, force: true })
}
