import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { gunzipSync } from "node:zlib"
import { ingest } from "../../src/ingest/Ingest.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { PostgresTest } from "../support/database.ts"
import { serveApi } from "./harness.ts"
import { osvDeps, post } from "./osvSupport.ts"

/** Every OSV record of three databases (test/fixtures/osv-corpus/PROVENANCE.md). */
const FILES = ["go-vulndb", "rustsec", "pysec"].map((name) =>
  fileURLToPath(new URL(`../fixtures/osv-corpus/${name}.ndjson.gz`, import.meta.url))
)
const RECORDS = FILES.flatMap((path) =>
  gunzipSync(readFileSync(path)).toString("utf8").split("\n").filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, any>)
)

interface Check {
  readonly id: string
  readonly query: { readonly package: { readonly ecosystem: string; readonly name: string }; readonly version: string }
  readonly expected: boolean
}

/**
 * Each enumerated affected version must return the record; each `fixed` version must not, unless the
 * record lists it or another range of the record for the package opens or covers it (then it is not asked).
 */
const checks: Array<Check> = []
for (const record of RECORDS) {
  const affected: Array<any> = record.affected ?? []
  for (const entry of affected) {
    const pkg = { ecosystem: entry.package.ecosystem, name: entry.package.name }
    const same = affected.filter((a) => a.package.ecosystem === pkg.ecosystem && a.package.name === pkg.name)
    const versions: Array<string> = entry.versions ?? []
    // The first and last two of each list, every one of them in full runs (OSV_CORPUS_FULL=1): about 1 s a 1,000 queries here.
    const asked = process.env.OSV_CORPUS_FULL === "1" || versions.length <= 4
      ? versions
      : [...versions.slice(0, 2), ...versions.slice(-2)]
    for (const version of asked) checks.push({ id: record.id, query: { package: pkg, version }, expected: true })
    for (const range of entry.ranges ?? []) {
      if (range.type === "GIT") continue
      for (const event of range.events) {
        if (event.fixed === undefined) continue
        const listed = same.some((a) => (a.versions ?? []).includes(event.fixed))
        const otherRange = same.some((a) => (a.ranges ?? []).some((r: any) => r !== range && r.type !== "GIT"))
        const reopened = range.events.some((e: any) => e.introduced === event.fixed)
        if (!listed && !otherRange && !reopened) {
          checks.push({ id: record.id, query: { package: pkg, version: event.fixed }, expected: false })
        }
      }
    }
  }
}

const BATCH = 1000

describe("OSV corpus through /v1/querybatch (PostgreSQL)", () => {
  layer(osvDeps(PostgresTest), { excludeTestServices: true, timeout: 120_000 })((it) => {
    it.effect(
      `every enumerated version returns its record and every fixed version does not (${RECORDS.length} records)`,
      () =>
        Effect.scoped(Effect.gen(function*() {
          const base = yield* serveApi(Layer.succeedContext(yield* Effect.context<any>()))
          const org = yield* Effect.flatMap(Organizations, (orgs) =>
            orgs.create({ name: "corpus", perMinute: 0, perWeek: 0 }))
          // One worker: the path production ingests take (records' OSV forms made on the worker).
          yield* ingest({ paths: FILES, source: "osv" }, { workers: 1 }).pipe(Stream.runDrain)
          const wrong: Array<string> = []
          for (let start = 0; start < checks.length; start += BATCH) {
            const slice = checks.slice(start, start + BATCH)
            const answer = yield* post(base, org, "/querybatch", {
              queries: slice.map((c) =>
                c.query
              )
            })
            assert.strictEqual(answer.status, 200, JSON.stringify(answer.body))
            slice.forEach((check, n) => {
              const result = answer.body.results[n]
              const found = result.vulns.some((v: { id: string }) => v.id === check.id)
              // A page holds 1,000 identifiers: no package of the corpus has that many records.
              assert.isUndefined(result.next_page_token)
              if (found !== check.expected) {
                wrong.push(
                  `${check.id} ${check.query.package.ecosystem}/${check.query.package.name}@${check.query.version}`
                )
              }
            })
          }
          assert.isAbove(checks.length, 20_000)
          assert.deepStrictEqual(wrong.slice(0, 20), [], `${wrong.length} of ${checks.length} wrong`)
        })),
      300_000
    )
  })
})
