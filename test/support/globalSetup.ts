import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { mkdtempSync, rmSync } from "node:fs"
import { Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerPostgres } from "../../src/db/Database.ts"
import { ensureMigratedTemplate } from "../../src/db/MigratedTemplate.ts"
import { MigrationsLayer } from "../../src/db/Migrations.ts"
import { AdminUrl } from "./database.ts"

/**
 * Fails fast, with the command that fixes it, when the local PostgreSQL is not running. Gives the
 * run one temporary directory: `TMPDIR` points the test processes (forked after this) at it, so the
 * data directories, sockets and browser profiles the tests make with `mkdtemp` are all removed when
 * the run ends. Left in `/tmp` they came to about 0.7 GB a run (PGlite data directories of up to
 * 43 MB each). Makes the migrated empty cluster new embedded databases start from
 * (src/db/MigratedTemplate.ts) once, before the files that create them run side by side, and the
 * migrated PostgreSQL database the throwaway ones are copied from (test/support/database.ts). Every
 * database of the run is named by this process's id; they are dropped together when the run ends,
 * with those of runs that were killed before they could.
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
  const adminUrl = Effect.runSync(AdminUrl)
  await dropDatabases(adminUrl, (pid) => pid !== process.pid && !alive(pid))
  const prefix = `${RUN_PREFIX}${process.pid}_`
  const template = `${prefix}template`
  await Promise.all([ensureMigratedTemplate(), migrated(adminUrl, template)])
  process.env.VDB_TEST_DB_PREFIX = prefix
  process.env.VDB_TEST_DB_TEMPLATE = template
  const root = mkdtempSync(join(tmpdir(), "vdb-test-"))
  process.env.TMPDIR = root
  return async () => {
    rmSync(root, { recursive: true, force: true })
    await dropDatabases(adminUrl, (pid) => pid === process.pid)
  }
}

/** The name of every database a run makes starts with this, then the run's process id. */
const RUN_PREFIX = "vdb_test_run"

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const withAdmin = <A>(adminUrl: string, use: (sql: PgClient.PgClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(PgClient.make({ url: Redacted.make(adminUrl), maxConnections: 8 }), use)).pipe(
      Effect.provide(Reactivity.layer),
      Effect.orDie
    )
  )

/** Creates `name` empty and applies every migration, as a server's start-up does. */
const migrated = async (adminUrl: string, name: string) => {
  await withAdmin(adminUrl, (sql) => sql.unsafe(`CREATE DATABASE ${name}`))
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  await Effect.runPromise(
    Effect.scoped(Layer.build(Layer.provideMerge(MigrationsLayer, layerPostgres(Redacted.make(url.toString()), 1))))
  )
}

/**
 * Drops the runs' databases whose run id `which` picks, several at once: each DROP DATABASE
 * waits for a checkpoint, and the ones waiting together share it.
 */
const dropDatabases = (adminUrl: string, which: (pid: number) => boolean) =>
  withAdmin(adminUrl, (sql) =>
    Effect.gen(function*() {
      const rows = yield* sql.unsafe<{ datname: string }>(
        `SELECT datname FROM pg_database WHERE datname LIKE '${RUN_PREFIX}%'`
      )
      const names = rows.map((r) => r.datname).filter((name) => {
        const pid = Number(/^vdb_test_run(\d+)_/.exec(name)?.[1])
        return Number.isInteger(pid) && which(pid)
      })
      yield* Effect.forEach(names, (name) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`), {
        concurrency: 8,
        discard: true
      })
    }))
