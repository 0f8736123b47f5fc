import { createHash, randomUUID } from "node:crypto"
import { readdirSync, readFileSync, renameSync, rmSync } from "node:fs"
import { basename, dirname, join } from "node:path"
import { MIGRATIONS_DIR } from "./Migrations.ts"
import { CACHE_DIR, ensureTemplate, isCluster, onWorker, pgliteVersion, templateDir } from "./PgliteTemplate.ts"

/**
 * A new embedded database starts as a copy of the empty cluster with every
 * migration already applied, when there is one, instead of applying them
 * itself: on a 2-core VM a first command on a new data directory spent about
 * 2 s of CPU on the migrations (5.6-6.5 s against 4.0-4.5 s of user CPU for
 * `bin/vdb org list` on an existing one). The test suite makes the copy once
 * in its global setup, before the dozens of new data directories its files make.
 *
 * The copy is named by PGlite's version and by the migration files (names and
 * contents): a changed or added migration names another copy, so a database
 * never starts from a schema its files do not describe. The migrator still runs
 * at every open and finds nothing to do; a database copied from the empty
 * cluster (no migrated copy, or one that fails) migrates as before.
 */

const PREFIX = "migrated-cluster-"

/** The migration files, as they are now: a copy is of exactly these. */
const migrationsDigest = () => {
  const hash = createHash("sha256")
  for (const file of readdirSync(MIGRATIONS_DIR).sort()) {
    hash.update(`${file}\0`).update(readFileSync(join(MIGRATIONS_DIR, file))).update("\0")
  }
  return hash.digest("hex").slice(0, 16)
}

/** Where the migrated empty cluster of this PGlite version and these migrations is kept. */
export const migratedTemplateDir = (): string => join(CACHE_DIR, `${PREFIX}${pgliteVersion()}-${migrationsDigest()}`)

/** What a new embedded database is copied from: the migrated cluster when it was made, otherwise the empty one. */
export const newClusterTemplate = (): string => {
  const migrated = migratedTemplateDir()
  return isCluster(migrated) ? migrated : templateDir()
}

/**
 * Makes the migrated cluster at `path` (and the empty one it starts from)
 * unless it is there; whether it is there after. On a worker thread, made
 * under a temporary name and renamed, as the empty cluster is.
 */
export const ensureMigratedTemplate = async (path: string = migratedTemplateDir()): Promise<boolean> => {
  if (isCluster(path)) return true
  if (!(await ensureTemplate())) return false
  const partial = `${path}.${randomUUID()}.partial`
  try {
    await onWorker("./MigratedTemplateWorker.ts", { dir: partial, template: templateDir() })
    renameSync(partial, path)
    // Copies for other migrations or PGlite versions are not used again (40 MB each). A process copying
    // one just now fails its copy and makes its database the slow way (src/db/PgliteTemplate.ts).
    for (const name of readdirSync(dirname(path))) {
      if (name.startsWith(PREFIX) && !name.includes(".partial") && name !== basename(path)) {
        rmSync(join(dirname(path), name), { recursive: true, force: true })
      }
    }
  } catch {
    // Another process renamed its copy first, or the migrations failed (they then fail where they run).
    rmSync(partial, { recursive: true, force: true })
  }
  return isCluster(path)
}
