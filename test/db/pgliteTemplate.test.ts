import { existsSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { PGlite, type PGliteOptions } from "@electric-sql/pglite"
import { afterEach, assert, describe, it } from "vitest"
import { openPglite } from "../../src/db/PgliteTemplate.ts"

/**
 * `PGlite.create`, recording whether each call unpacked the copy (`copy`) or not (`plain`: initdb in
 * an empty directory, a plain open in an existing cluster).
 */
const recording = () => {
  const calls: Array<"copy" | "plain"> = []
  const create = (dir: string, options: PGliteOptions) => {
    calls.push(options.loadDataDir === undefined ? "plain" : "copy")
    return PGlite.create(dir, options)
  }
  return { calls, create }
}

const open: Array<PGlite> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((db) => db.close()))
})

describe("new embedded databases start from a copy of an empty cluster", () => {
  it("the first runs initdb and keeps a copy; the next starts from it, as a cluster of its own; an existing one just opens", async () => {
    const root = mkdtempSync(join(tmpdir(), "vdb-template-"))
    const template = join(root, "cache", "empty.tar")
    const { calls, create } = recording()

    const first = await openPglite(create, join(root, "a"), {}, template)
    open.push(first)
    assert.isTrue(existsSync(template))
    await first.exec("CREATE TABLE only_in_a (x int); INSERT INTO only_in_a VALUES (1)")

    const second = await openPglite(create, join(root, "b"), {}, template)
    open.push(second)
    assert.deepStrictEqual(calls, ["plain", "copy"])
    assert.deepStrictEqual((await second.query("SELECT 1 AS one")).rows, [{ one: 1 }])
    // The copy was taken before anything was written to the first: the second does not see its table.
    assert.deepStrictEqual((await second.query("SELECT to_regclass('only_in_a') AS t")).rows, [{ t: null }])
    await second.exec("CREATE TABLE in_b (x int)")

    await second.close()
    open.splice(open.indexOf(second), 1)
    const reopened = await openPglite(create, join(root, "b"), {}, template)
    open.push(reopened)
    assert.deepStrictEqual(calls, ["plain", "copy", "plain"])
    assert.deepStrictEqual((await reopened.query("SELECT to_regclass('in_b')::text AS t")).rows, [{ t: "in_b" }])
  })

  it("a copy that cannot be unpacked is passed over: initdb runs and the cluster works", async () => {
    const root = mkdtempSync(join(tmpdir(), "vdb-template-"))
    const template = join(root, "empty.tar")
    writeFileSync(template, "not a tarball")
    const { calls, create } = recording()
    const db = await openPglite(create, join(root, "a"), {}, template)
    open.push(db)
    assert.deepStrictEqual(calls, ["copy", "plain"])
    assert.deepStrictEqual((await db.query("SELECT 1 AS one")).rows, [{ one: 1 }])
  })
})
