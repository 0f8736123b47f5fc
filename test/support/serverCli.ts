import { Effect, Exit, Scope } from "effect"
import { randomBytes } from "node:crypto"
import { expect } from "vitest"
import { throwawayDatabase } from "./database.ts"
import { type Run, type RunningServer, runVdb, startServer, tempDataDir } from "./processes.ts"

/** The one `vdb: ` line a refused command prints (log lines are JSON), with exit 1. */
export const refusal = (run: Run) => {
  expect(run.code, run.stderr).toBe(1)
  const lines = run.stderr.split("\n").filter((l) => l !== "" && !l.startsWith("{"))
  expect(lines, run.stderr).toHaveLength(1)
  return lines[0]!
}

export interface Org {
  readonly uuid: string
  readonly secret: string
}

/** A real `bin/vdb serve api` on a throwaway PostgreSQL database, and the CLI as a user runs it against that. */
export interface ServerCli {
  readonly server: RunningServer
  /** The environment both share (database, master key, data folder). */
  readonly env: Record<string, string>
  /** `bin/vdb args`, with `extra` added to the environment and `input` on stdin; the test fails unless it exits 0. */
  readonly ok: (args: ReadonlyArray<string>, extra?: Record<string, string>, input?: string) => Promise<Run>
  /** `bin/vdb args` whatever it answers. */
  readonly run: (args: ReadonlyArray<string>, extra?: Record<string, string>) => Promise<Run>
  /** A new organization with no limit a minute and `perWeek` a week (0 = none). */
  readonly createOrg: (name: string, perWeek?: number) => Promise<Org>
  /** The API commands' credentials for an organization, against this server. */
  readonly as: (org: Org) => Record<string, string>
  readonly stop: () => Promise<void>
}

/**
 * `bin/vdb serve services` on a throwaway PostgreSQL database of its own, for one test file;
 * `settings` adds to its environment. `stop` stops the server, then drops its database.
 */
export const startServerOnOwnDatabase = async (
  services: ReadonlyArray<string>,
  settings: Record<string, string> = {}
) => {
  const scope = Effect.runSync(Scope.make())
  const db = await Effect.runPromise(Scope.provide(throwawayDatabase, scope))
  const env: Record<string, string> = {
    DATABASE_URL: db.url,
    VDB_MASTER_KEY: randomBytes(32).toString("base64"),
    VDB_DATA_DIR: tempDataDir(),
    VDB_LOG_LEVEL: "Warn",
    ...settings
  }
  const server = await startServer(env, services).catch(async (error) => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw error
  })
  const stop = async () => {
    await server.stop()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
  return { server, env, stop }
}

/** Starts the API server (in a `beforeAll`, given a couple of minutes on a loaded machine); `stop` in the `afterAll`. */
export const startServerCli = async (): Promise<ServerCli> => {
  const { env, server, stop } = await startServerOnOwnDatabase(["api"])
  const run = (args: ReadonlyArray<string>, extra: Record<string, string> = {}, input?: string) =>
    runVdb(args, { ...env, ...extra }, input)
  const ok = async (args: ReadonlyArray<string>, extra: Record<string, string> = {}, input?: string) => {
    const done = await run(args, extra, input)
    expect(done.code, `${args.join(" ")}: ${done.stderr}`).toBe(0)
    return done
  }
  return {
    server,
    env,
    ok,
    run,
    createOrg: async (name, perWeek = 0) =>
      JSON.parse(
        (await ok(["org", "create", "--name", name, "--per-minute", "0", "--per-week", String(perWeek), "--json"]))
          .stdout
      ) as Org,
    as: (org) => ({
      VDB_ORG_UUID: org.uuid,
      VDB_ORG_SECRET: org.secret,
      VDB_API_URL: `http://127.0.0.1:${server.ports.api}/v1`
    }),
    stop
  }
}
