import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { brotliDecompressSync, gunzipSync } from "node:zlib"
import { assert, describe, it } from "vitest"
import { compressible, encoded, type VulnAnswer } from "../../../src/api/CachedAnswers.ts"

const SOURCES = fileURLToPath(new URL("../../fixtures/data/sources/", import.meta.url))

/** The fixture's CVE 5.1, NVD and OSV records as compact JSON: what `/vuln` bodies are made of. */
const records = (): ReadonlyArray<readonly [string, Uint8Array]> =>
  ["mitre", "nist-nvd", "osv"].flatMap((source) => {
    const files: Array<string> = []
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name)
        if (statSync(path).isDirectory()) walk(path)
        else if (name.endsWith(".json")) files.push(path)
      }
    }
    walk(join(SOURCES, source))
    return files.map((path) =>
      [path.slice(SOURCES.length), Buffer.from(JSON.stringify(JSON.parse(readFileSync(path, "utf8"))))] as const
    )
  })

describe("/vuln's cached codings", () => {
  it("brotli is never bigger than gzip on the fixture's records (so preferring br on a tie never costs the client bytes)", () => {
    let checked = 0
    for (const [name, identity] of records()) {
      const answer: VulnAnswer = { etag: "", identity }
      if (!compressible(answer)) continue
      const br = encoded(answer, "br")
      const gzip = encoded(answer, "gzip")
      assert.deepStrictEqual(brotliDecompressSync(br.body), Buffer.from(identity), name)
      assert.deepStrictEqual(gunzipSync(gzip.body), Buffer.from(identity), name)
      assert.isAtMost(br.body.byteLength, gzip.body.byteLength, name)
      // Kept with the entry: the second call compresses nothing and adds no bytes.
      assert.strictEqual(encoded(answer, "br").added, 0)
      checked++
    }
    assert.isAtLeast(checked, 50)
  })
})
