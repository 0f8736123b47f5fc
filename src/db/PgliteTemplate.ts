import type { PGlite, PGliteOptions } from "@electric-sql/pglite"
import { randomUUID } from "node:crypto"
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { basename, dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Worker } from "node:worker_threads"

/**
 * A new embedded database starts as a copy of an empty cluster instead of
 * running initdb: on a 2-core VM a first `bin/vdb org list` on a new data
 * directory takes 4.1 s instead of 6.1-7.0 s (initdb alone is 4.8 s). That is
 * every new `VDB_DATA_DIR`: a user's first `make start` or command, and the
 * test suite's dozens. The empty cluster is made once per PGlite version (a
 * newer PGlite never starts from an older one's catalog) by `make setup`
 * (`bin/setup`) and the test suite's global setup, with initdb on a worker
 * thread, and kept beside Node's compile cache (`.cache/`, as `bin/vdb` sets
 * it). It is made under a temporary name and renamed, so a process never
 * copies a partial one, and two processes making it at once both end up with
 * the one renamed first.
 *
 * Only an empty or missing directory is filled from the copy; an existing
 * cluster opens as before. Without the copy, or if it cannot be copied or
 * opened, initdb runs in the (emptied) directory, as it always did.
 *
 * Not PGlite's own `loadDataDir` (a tarball of `dumpDataDir`): it unpacks
 * through the WebAssembly heap, which only grows, and left the process
 * 90-140 MiB bigger for its life (355 and 317 MiB against 216 and 226 MiB).
 * Nor initdb on the process's own thread, for the same reason: PGlite's
 * memory goes away with the worker.
 */

/** Where the prepared clusters are kept (beside Node's compile cache, as `bin/vdb` sets it). */
export const CACHE_DIR = fileURLToPath(new URL("../../.cache/pglite/", import.meta.url))

/** PGlite's version, from its package.json (not among its exports, so found from its entry point). */
export const pgliteVersion = (): string => {
  let dir = dirname(createRequire(import.meta.url).resolve("@electric-sql/pglite"))
  while (!existsSync(join(dir, "package.json")) && dirname(dir) !== dir) dir = dirname(dir)
  return (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string }).version
}

/** Where the empty cluster of this PGlite version is kept. */
export const templateDir = (): string => join(CACHE_DIR, `empty-cluster-${pgliteVersion()}`)

export const isCluster = (dir: string) => existsSync(join(dir, "PG_VERSION"))
const isEmpty = (dir: string) => !existsSync(dir) || readdirSync(dir).length === 0

/** Runs `module` (beside this one) on a worker thread, so that PGlite's memory goes away with it. */
export const onWorker = (module: string, workerData: Readonly<Record<string, string>>) =>
  new Promise<void>((resolve, reject) => {
    const worker = new Worker(new URL(module, import.meta.url), {
      workerData,
      // `--input-type` (a `node -e` caller's) would refuse the worker's file.
      execArgv: process.execArgv.filter((arg) => !arg.startsWith("--input-type"))
    })
    worker.once("error", reject)
    worker.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${module} exited with ${code}`))))
  })

/** Makes the empty cluster at `path` unless it is there; whether it is there after. */
export const ensureTemplate = async (path: string = templateDir()): Promise<boolean> => {
  if (isCluster(path)) return true
  const partial = `${path}.${randomUUID()}.partial`
  try {
    mkdirSync(dirname(path), { recursive: true })
    await onWorker("./PgliteTemplateWorker.ts", { dir: partial })
    renameSync(partial, path)
  } catch {
    // Another process renamed its copy first, or the cache cannot be written (a read-only checkout).
    rmSync(partial, { recursive: true, force: true })
  }
  return isCluster(path)
}

/**
 * Opens (or creates) the cluster in `dir`: a new one as a copy of the
 * cluster at `template` (asked for only then) when there is one, otherwise (or when that fails) by
 * initdb in `dir`.
 */
export const openPglite = async (
  create: (dir: string, options: PGliteOptions) => Promise<PGlite>,
  dir: string,
  options: PGliteOptions,
  templateOf: string | (() => string) = templateDir
): Promise<PGlite> => {
  if (!isEmpty(dir)) return create(dir, options)
  const template = typeof templateOf === "string" ? templateOf : templateOf()
  if (isCluster(template)) {
    const staging = `${dir}.${randomUUID()}.copy`
    try {
      // Copied beside `dir` and renamed onto it: a process killed mid-copy leaves `dir` empty (copied
      // again next time), never half a cluster. Copies such a kill left behind are removed first.
      const parent = dirname(dir)
      const prefix = `${basename(dir)}.`
      for (const name of existsSync(parent) ? readdirSync(parent) : []) {
        if (name.startsWith(prefix) && name.endsWith(".copy")) {
          rmSync(join(parent, name), { recursive: true, force: true })
        }
      }
      cpSync(template, staging, { recursive: true })
      renameSync(staging, dir)
      return await create(dir, options)
    } catch {
      rmSync(staging, { recursive: true, force: true })
      rmSync(dir, { recursive: true, force: true })
      mkdirSync(dir, { recursive: true })
    }
  }
  return create(dir, options)
}
