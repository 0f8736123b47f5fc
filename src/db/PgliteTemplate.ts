import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { PGlite, PGliteOptions } from "@electric-sql/pglite"

/**
 * A new embedded database starts from a copy of an empty cluster instead of
 * running initdb: PGlite's `loadDataDir` unpacks a tarball its own
 * `dumpDataDir` made. On a 2-core VM that is 1.4 s instead of 4.8 s for every
 * new data directory (a first `make start`, every `bin/vdb` command on a new
 * `VDB_DATA_DIR`, and the test suite's dozens of them). The copy is made once,
 * the first time a cluster is created, and kept beside Node's compile cache
 * (`.cache/`, as `bin/vdb` sets it), one file per PGlite version: a newer
 * PGlite never starts from an older one's catalog.
 *
 * Only an empty or missing directory is filled from the copy; an existing
 * cluster opens as before. A copy that cannot be read or unpacked is ignored
 * (initdb runs, as without it), and one that cannot be written costs nothing
 * but the next creation's time. Written to a temporary name and renamed, so
 * processes creating clusters at once never read a partial copy.
 */

const CACHE_DIR = fileURLToPath(new URL("../../.cache/pglite/", import.meta.url))

/** PGlite's version, from its package.json (not among its exports, so read from beside its entry point). */
const pgliteVersion = (): string => {
  let dir = dirname(createRequire(import.meta.url).resolve("@electric-sql/pglite"))
  while (!existsSync(join(dir, "package.json")) && dirname(dir) !== dir) dir = dirname(dir)
  return (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string }).version
}

/** Where the empty cluster of this PGlite version is kept. */
export const templatePath = (): string => join(CACHE_DIR, `empty-cluster-${pgliteVersion()}.tar`)

const isEmpty = (dir: string) => !existsSync(dir) || readdirSync(dir).length === 0

const readTemplate = (path: string): Blob | undefined => {
  try {
    return new Blob([readFileSync(path)])
  } catch {
    return undefined
  }
}

const saveTemplate = async (db: PGlite, path: string) => {
  try {
    const bytes = new Uint8Array(await (await db.dumpDataDir("none")).arrayBuffer())
    mkdirSync(dirname(path), { recursive: true })
    const partial = `${path}.${process.pid}.${Date.now()}.partial`
    writeFileSync(partial, bytes)
    renameSync(partial, path)
  } catch {
    // A read-only checkout or a full disk: the next new cluster runs initdb again.
  }
}

/**
 * Opens (or creates) the cluster in `dir`: from the empty-cluster copy when
 * `dir` is new and a copy exists, otherwise with initdb, keeping a copy of
 * what initdb made for the next new directory.
 */
export const openPglite = async (
  create: (dir: string, options: PGliteOptions) => Promise<PGlite>,
  dir: string,
  options: PGliteOptions,
  path: string = templatePath()
): Promise<PGlite> => {
  if (!isEmpty(dir)) return create(dir, options)
  const template = existsSync(path) ? readTemplate(path) : undefined
  if (template !== undefined) {
    try {
      return await create(dir, { ...options, loadDataDir: template })
    } catch {
      // Unpacked partly, or not at all: start again from an empty directory with initdb.
      rmSync(dir, { recursive: true, force: true })
      mkdirSync(dir, { recursive: true })
    }
  }
  const db = await create(dir, options)
  await saveTemplate(db, path)
  return db
}
