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

export const startBenchServer = (env: Readonly<Record<string, string>>, work: string) =>
  Effect.gen(function*() {
    const port = yield* Effect.promise(freePort)
    const log = openSync(join(work, "server.log"), "a")
    const server = spawn(process.execPath, [
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
        ...env,
        VDB_API_PORT: String(port)
      },
      stdio: ["ignore", log, log]
    })
    const serverExited = new Promise<void>((r) => server.once("exit", () => r()))
    const close = () =>
      Effect.promise(() => {
        if (server.exitCode === null) server.kill("SIGTERM")
        return serverExited
      })
    yield* Effect.addFinalizer(close)
    yield* Effect.promise(async () => {
      const deadline = Date.now() + 60_000
      while (!(await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false))) {
        if (server.exitCode !== null || Date.now() > deadline) {
          throw new Error(`api server not ready: ${readFileSync(join(work, "server.log"), "utf8").slice(-1000)}`)
        }
        await new Promise((r) => setTimeout(r, 100))
      }
    })
    return { server, port, close }
  })
