/**
 * `bin/vdb serve api` as deployed (its Node flags and allocator settings, `serverFlags.ts`) for a
 * bench, on `env` plus a free loopback port, its log in `work/server.log`, ready when this returns
 * and stopped when the scope closes. `VDB_SYNC` is off unless `env` says otherwise.
 */
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { openSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { freePort } from "../test/support/processes.ts"
import { SERVER_ENV, SERVER_NODE_FLAGS } from "./serverFlags.ts"

const MAIN = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url))

/**
 * Spawns `bin/vdb serve api` as deployed on `port` (`nodeFlags` go before the server's own, e.g. a
 * profiler's), its output appended to `logPath`, and resolves once `/readyz` answers; rejects with
 * the log's tail if it exits first or is not ready within `readyWithinMs`. The one spawner every
 * bench uses.
 */
export const spawnServeApi = async (options: {
  readonly env: Readonly<Record<string, string>>
  readonly port: number
  readonly logPath: string
  readonly nodeFlags?: ReadonlyArray<string>
  readonly readyWithinMs?: number
}) => {
  const log = openSync(options.logPath, "a")
  const server = spawn(process.execPath, [
    ...(options.nodeFlags ?? []),
    ...SERVER_NODE_FLAGS,
    "--disable-warning=ExperimentalWarning",
    MAIN,
    "serve",
    "api"
  ], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      ...SERVER_ENV,
      ...options.env,
      VDB_API_PORT: String(options.port)
    },
    stdio: ["ignore", log, log]
  })
  const exited = new Promise<void>((r) => server.once("exit", () => r()))
  const stop = () => {
    if (server.exitCode === null) server.kill("SIGTERM")
    return exited
  }
  const deadline = Date.now() + (options.readyWithinMs ?? 60_000)
  while (!(await fetch(`http://127.0.0.1:${options.port}/readyz`).then((r) => r.ok, () => false))) {
    if (server.exitCode !== null || Date.now() > deadline) {
      await stop()
      throw new Error(`api server not ready: ${readFileSync(options.logPath, "utf8").slice(-2000)}`)
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  return { server, stop }
}

/** `spawnServeApi` on a free port, its log in `work/server.log`, stopped when the scope closes. */
export const startBenchServer = (env: Readonly<Record<string, string>>, work: string) =>
  Effect.gen(function*() {
    const port = yield* Effect.promise(freePort)
    const { server, stop } = yield* Effect.acquireRelease(
      Effect.promise(() => spawnServeApi({ env, port, logPath: join(work, "server.log") })),
      ({ stop }) => Effect.promise(stop)
    )
    return { server, port, close: () => Effect.promise(stop) }
  })
