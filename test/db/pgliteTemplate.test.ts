import { PGlite, type PGliteOptions } from "@electric-sql/pglite"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, assert, describe, it } from "vitest"
import { ensureMigratedTemplate, migratedTemplateDir, newClusterTemplate } from "../../src/db/MigratedTemplate.ts"
import { MIGRATIONS_DIR } from "../../src/db/Migrations.ts"
import { ensureTemplate, openPglite, templateDir } from "../../src/db/PgliteTemplate.ts"

const open: Array<PGlite> = []
afterEach(async () => {
  await Promise.all(open.splice(0).filter((db) => !db.closed).map((db) => db.close()))
})

/** `PGlite.create`, recording which directories it opened already holding a cluster (a copy, or an existing one). */
const recording = () => {
  const found: Array<boolean> = []
  const create = async (dir: string, options: PGliteOptions) => {
    found.push(existsSync(join(dir, "PG_VERSION")))
    const db = await PGlite.create(dir, options)
    open.push(db)
    return db
  }
  return { found, create }
}

// Each test runs initdb at least once (about 5 s on a quiet 2-core VM, 30 s in a busy suite).
describe("new embedded databases start as a copy of an empty cluster", { timeout: 180_000 }, () => {
  it("without the copy initdb runs in the directory; with it each new directory is a cluster of its own; an existing one just opens", async () => {
    const root = mkdtempSync(join(tmpdir(), "vdb-template-"))
    const template = join(root, "cache", "empty-cluster")
    const { found, create } = recording()

    const before = await openPglite(create, join(root, "before"), {}, template)
    assert.deepStrictEqual(found, [false])
    assert.isFalse(existsSync(template))
    assert.deepStrictEqual((await before.query("SELECT 1 AS one")).rows, [{ one: 1 }])
    found.length = 0

    // Made on a worker (initdb), once: a second call finds it.
    assert.isTrue(await ensureTemplate(template))
    assert.isTrue(await ensureTemplate(template))
    const a = await openPglite(create, join(root, "a"), {}, template)
    await a.exec("CREATE TABLE only_in_a (x int); INSERT INTO only_in_a VALUES (1)")
    const b = await openPglite(create, join(root, "b"), {}, template)
    assert.deepStrictEqual(found, [true, true])
    assert.deepStrictEqual((await b.query("SELECT to_regclass('only_in_a') AS t")).rows, [{ t: null }])
    await b.exec("CREATE TABLE in_b (x int)")
    await b.close()
    const reopened = await openPglite(create, join(root, "b"), {}, template)
    assert.deepStrictEqual((await reopened.query("SELECT to_regclass('in_b')::text AS t")).rows, [{ t: "in_b" }])
    // The copy itself was never written to.
    const pristine = await openPglite(create, join(root, "c"), {}, template)
    assert.deepStrictEqual(
      (await pristine.query("SELECT to_regclass('only_in_a') AS a, to_regclass('in_b') AS b")).rows,
      [{ a: null, b: null }]
    )
  })

  it("a copy a killed process left half-made beside the directory is removed, and the directory filled whole", async () => {
    const root = mkdtempSync(join(tmpdir(), "vdb-template-"))
    // The project's own copy (the suite's global setup made it).
    const template = templateDir()
    assert.isTrue(await ensureTemplate(template))
    const dir = join(root, "data", "pglite")
    mkdirSync(dir, { recursive: true })
    // As a kill -9 during the copy leaves it: the directory still empty, part of a copy beside it.
    mkdirSync(join(root, "data", "pglite.0d2c.copy", "base"), { recursive: true })
    writeFileSync(join(root, "data", "pglite.0d2c.copy", "PG_VERSION"), "15\n")
    const { found, create } = recording()
    const db = await openPglite(create, dir, {}, template)
    assert.deepStrictEqual(found, [true])
    assert.deepStrictEqual((await db.query("SELECT 1 AS one")).rows, [{ one: 1 }])
    assert.deepStrictEqual(readdirSync(join(root, "data")), ["pglite"])
  })

  it("a copy that does not open is passed over: the directory is emptied and initdb runs in it", async () => {
    const root = mkdtempSync(join(tmpdir(), "vdb-template-"))
    const template = join(root, "broken")
    mkdirSync(template)
    writeFileSync(join(template, "PG_VERSION"), "not a version\n")
    const { found, create } = recording()
    const db = await openPglite(create, join(root, "a"), {}, template)
    assert.deepStrictEqual(found, [true, false])
    assert.deepStrictEqual((await db.query("SELECT 1 AS one")).rows, [{ one: 1 }])
  })

  it("the migrated copy (the suite's global setup made it) holds every migration file's id, and only those", async () => {
    assert.isTrue(await ensureMigratedTemplate())
    assert.strictEqual(newClusterTemplate(), migratedTemplateDir())
    const { found, create } = recording()
    const db = await openPglite(create, join(mkdtempSync(join(tmpdir(), "vdb-template-")), "a"), {}, newClusterTemplate)
    assert.deepStrictEqual(found, [true])
    const applied = (await db.query<{ id: number }>("SELECT migration_id AS id FROM vdb_migrations ORDER BY 1")).rows
    const files = readdirSync(MIGRATIONS_DIR).flatMap((f) => /^(\d+)_.*\.sql$/.exec(f)?.[1] ?? []).map(Number)
    assert.deepStrictEqual(applied.map((r) => r.id), files.sort((a, b) => a - b))
  })
})
