/**
 * The benchmarks' throwaway PostgreSQL databases. Each is named for the bench
 * process that made it (`vdb_bench_<kind>_<pid>_<time>`) and dropped when the
 * bench ends; a bench killed before its cleanup (Ctrl-C, a crash) leaves its
 * database behind, gigabytes after an ingest run. `bench/run.ts` drops those
 * left by processes that no longer run before it starts any bench.
 */
import { execFile } from "node:child_process"
import { alive } from "../src/db/DataDirLock.ts"

const ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
const NAME = /^vdb_bench_[a-z]+_(\d+)_[0-9a-z]+$/

export const scratchDatabaseName = (kind: string) => `vdb_bench_${kind}_${process.pid}_${Date.now().toString(36)}`

/** One statement through `psql` as the local superuser; its output, unaligned. */
export const psql = (statement: string) =>
  new Promise<string>((done, reject) =>
    execFile(
      "psql",
      [ADMIN_URL, "-Atqc", statement],
      { timeout: 120_000 },
      (error, stdout) => (error ? reject(error) : done(stdout))
    )
  )

/** Drops scratch databases whose bench process is gone; the names of those dropped. Quiet when PostgreSQL is not there. */
export const dropAbandonedDatabases = async (): Promise<ReadonlyArray<string>> => {
  const names = await psql("SELECT datname FROM pg_database WHERE datname LIKE 'vdb\\_bench\\_%'").catch(() => "")
  const abandoned = names.split("\n").filter((name) => {
    const pid = NAME.exec(name)?.[1]
    return pid !== undefined && !alive(Number(pid))
  })
  for (const name of abandoned) await psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined)
  return abandoned
}
