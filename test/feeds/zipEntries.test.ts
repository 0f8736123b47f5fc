import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { listEntries, openEntries } from "../../src/feeds/ZipArchive.ts"
import { ZIP_LIMITS } from "../../src/feeds/ZipFeed.ts"
import { zipOf } from "../support/mirror/zipWriter.ts"

/** An archive on disk, read as the feeds read one: the names, then each entry's bytes in order. */
const readAll = (bytes: Buffer) =>
  Effect.gen(function*() {
    const dir = mkdtempSync(join(tmpdir(), "vdb-zip-test-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
    const path = join(dir, "a.zip")
    writeFileSync(path, bytes)
    const accept = (name: string) => name.endsWith(".json")
    const names = yield* listEntries(path, accept, ZIP_LIMITS)
    const { entry } = yield* openEntries(path, accept, ZIP_LIMITS)
    const texts: Array<string> = []
    for (let n = 0; n < names.length; n++) {
      const chunks = yield* Stream.runCollect(entry(n))
      texts.push(Buffer.concat([...chunks]).toString("utf8"))
    }
    return { names, texts }
  }).pipe(Effect.scoped)

const records = Array.from({ length: 700 }, (_, n) => ({
  name: `r/${String(n).padStart(4, "0")}.json`,
  data: Buffer.from(JSON.stringify({ id: `X-${n}`, text: "x".repeat(n * 13) }))
}))

/** The byte offset of an entry's local header's field `at` (the archive's entries start at 0, in order). */
const localField = (zip: Buffer, name: string, at: number) => zip.indexOf(Buffer.from(name)) - 30 + at

describe("zip archives of records (small entries read from a window of the file)", () => {
  it.effect("gives every accepted entry's bytes in order, stored or deflated, skipping others", () =>
    Effect.gen(function*() {
      const zip = zipOf([
        ...records,
        { name: "README.md", data: Buffer.from("not a record") },
        { name: "stored.json", data: Buffer.from("{\"stored\":true}"), store: true }
      ])
      const { names, texts } = yield* readAll(zip)
      assert.deepStrictEqual(names, [...records.map((r) => r.name), "stored.json"])
      assert.deepStrictEqual(texts, [...records.map((r) => r.data.toString("utf8")), "{\"stored\":true}"])
    }))

  it.effect("an entry that inflates past its declared size is a compression bomb", () =>
    Effect.gen(function*() {
      const zip = zipOf([{ name: "a.json", data: Buffer.alloc(4096, 0x20) }])
      // Both the local header and the central directory declare 100 bytes.
      zip.writeUInt32LE(100, localField(zip, "a.json", 22))
      zip.writeUInt32LE(100, zip.lastIndexOf(Buffer.from("a.json")) - 46 + 24)
      const error = yield* Effect.flip(readAll(zip))
      assert.strictEqual(error.kind, "CompressionBomb")
    }))

  it.effect("an entry whose bytes do not match its CRC-32 is corrupt", () =>
    Effect.gen(function*() {
      const zip = zipOf([{ name: "a.json", data: Buffer.from("{\"a\":1}"), store: true }])
      zip[localField(zip, "a.json", 30 + "a.json".length + 5)] = 0x32
      const error = yield* Effect.flip(readAll(zip))
      assert.strictEqual(error.kind, "Corrupt")
    }))
})
