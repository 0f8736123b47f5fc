import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { MIGRATIONS_DIR } from "../../src/db/Migrations.ts"
import { splitStatements } from "../../src/db/SqlStatements.ts"
import { readItems } from "../../src/ingest/formats/index.ts"
import * as nuclei from "../../src/ingest/formats/nuclei.ts"
import { resumePending } from "../../src/ingest/NormaliseResume.ts"
import type { Normalised, UpstreamItem } from "../../src/ingest/Upstream.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SqlBackends } from "../support/database.ts"

const LOG4SHELL = "CVE-2021-44228"
const FILE = `sources/nuclei/${LOG4SHELL}.yaml`
const text = readFileSync(fileURLToPath(new URL(`../fixtures/data/${FILE}`, import.meta.url)), "utf8")

/** The template as phase 1 reads and stores it. */
const item = [...readItems("nuclei", FILE, text)][0] as UpstreamItem
const stored = {
  source: "nuclei",
  identifier: item.identifier,
  content: item.raw,
  hash: createHash("sha256").update(item.raw).digest("base64url")
}

/** What the normaliser wrote for this template before it derived the path: no URL, no path. */
const before = (nuclei.normalise(item) as ReadonlyArray<Normalised>).map((n): Normalised =>
  n.kind !== "exploits" ? n : {
    ...n,
    exploits: n.exploits.map(({ url: _url, ...e }) => {
      const { path: _p, templateUrl: _t, rawUrl: _r, ...rest } = e.details.nuclei as Record<string, unknown>
      return { ...e, details: { nuclei: rest } }
    })
  }
)

const migration = readFileSync(`${MIGRATIONS_DIR}0597_nuclei_template_paths.sql`, "utf8")

describe.each(SqlBackends)("nuclei rows stored without a URL ($name)", ({ layer: database }) => {
  layer(VulnStore.layer.pipe(Layer.provideMerge(database)), { excludeTestServices: true })((it) => {
    it.effect(
      "get it from the migration and the start-up resume, from their stored text",
      () =>
        Effect.gen(function*() {
          const store = yield* VulnStore
          const sql = yield* SqlClient.SqlClient
          yield* store.putRaw([stored])
          yield* store.putNormalised([{
            source: "nuclei",
            identifier: item.identifier,
            hash: stored.hash,
            outputs: before
          }], [])
          const served = () =>
            Effect.map(store.exploits(LOG4SHELL, { limit: 10, offset: 0, includeContent: false }), (r) => r.exploits)
          assert.deepStrictEqual((yield* served()).map((e) => e.url), [undefined])
          assert.strictEqual(yield* resumePending(), 0)

          for (const statement of splitStatements(migration)) yield* sql.unsafe(statement)
          assert.strictEqual(yield* resumePending(), 1)

          const [row] = yield* served()
          const path = "http/cves/2021/CVE-2021-44228.yaml"
          assert.strictEqual(row!.url, `https://github.com/projectdiscovery/nuclei-templates/blob/main/${path}`)
          assert.strictEqual((row!.details.nuclei as { path: string }).path, path)
          assert.strictEqual(yield* resumePending(), 0)
        }),
      { timeout: 30_000 }
    )
  })
})
