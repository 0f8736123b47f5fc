import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SqlBackends } from "../support/database.ts"
import { ingestData, manifest, observe, specSource } from "./manifestCheck.ts"

/**
 * Every identifier of test/fixtures/data/manifest.json (a copy of ../shared/data), read back through the
 * store the API uses. The manifest counts only what names the identifier
 * directly; the store also answers through the alias graph and with the
 * corpus files, so sources and aliases are checked as "at least".
 */
describe("the ingested data folder against manifest.json (PostgreSQL)", () => {
  layer(VulnStore.layer.pipe(Layer.provideMerge(SqlBackends[0].layer)), { excludeTestServices: true })((it) => {
    it.effect(
      "ingests with nothing skipped, re-ingests all unchanged, and every manifest fact is found",
      () =>
        Effect.gen(function*() {
          const summary = yield* ingestData
          assert.isTrue(summary._tag === "Some" && summary.value._tag === "Summary")
          if (summary._tag === "Some" && summary.value._tag === "Summary") {
            assert.strictEqual(summary.value.skipped, 0)
            assert.strictEqual(summary.value.inserted, summary.value.normalised)
          }
          const again = yield* ingestData
          assert.isTrue(again._tag === "Some" && again.value._tag === "Summary")
          if (
            again._tag === "Some" && again.value._tag === "Summary" && summary._tag === "Some" &&
            summary.value._tag === "Summary"
          ) {
            const { inserted, normalised, skipped, unchanged, updated } = again.value
            assert.deepStrictEqual(
              { inserted, updated, normalised, skipped, unchanged },
              { inserted: 0, updated: 0, normalised: 0, skipped: 0, unchanged: summary.value.inserted },
              "a second run over the same files changes nothing"
            )
          }
          const problems: Array<string> = []
          const entries = Object.entries(manifest())
          assert.isAtLeast(entries.length, 139)
          for (const [id, entry] of entries) {
            const seen = yield* observe(id)
            const expected = [...new Set(entry.sources.map(specSource))]
            const missing = expected.filter((s) => !seen.sources.includes(s))
            if (missing.length > 0) {
              problems.push(`${id}: sources ${missing.join(",")} missing (have ${seen.sources.join(",")})`)
            }
            if (seen.processing.length > 0) problems.push(`${id}: still processing ${seen.processing.join(",")}`)
            const lost = entry.aliases.filter((a) => !seen.aliases.includes(a))
            if (lost.length > 0) problems.push(`${id}: aliases ${lost.join(",")} missing`)
            const x = entry.exploits
            if (x !== undefined) {
              const s = { metasploit: 0, nuclei: 0, github: 0, exploitDb: 0, ...seen.summary }
              if (s.metasploit !== x.metasploit) problems.push(`${id}: metasploit ${s.metasploit} ≠ ${x.metasploit}`)
              if (s.nuclei !== x.nuclei) problems.push(`${id}: nuclei ${s.nuclei} ≠ ${x.nuclei}`)
              if ((s.github > 0) !== x.pocInGithub) {
                problems.push(`${id}: github ${s.github}, manifest ${x.pocInGithub}`)
              }
              // The mapping and the CSV subset name overlapping EDB ids; one exploit per EDB id.
              if (
                s.exploitDb < Math.max(x.exploitDb, x.exploitDbRowsInSubset) ||
                s.exploitDb > x.exploitDb + x.exploitDbRowsInSubset
              ) {
                problems.push(
                  `${id}: exploitDb ${s.exploitDb} outside [${Math.max(x.exploitDb, x.exploitDbRowsInSubset)}, ${
                    x.exploitDb + x.exploitDbRowsInSubset
                  }]`
                )
              }
            }
            if (entry.epss !== undefined && id.startsWith("CVE-")) {
              if (seen.epss === undefined) problems.push(`${id}: no x_epss`)
              else if (seen.epss.score !== entry.epss.epss || seen.epss.percentile !== entry.epss.percentile) {
                problems.push(
                  `${id}: x_epss ${seen.epss.score}/${seen.epss.percentile} ≠ ${entry.epss.epss}/${entry.epss.percentile}`
                )
              }
            }
          }
          assert.deepStrictEqual(problems, [])

          const store = yield* VulnStore
          const byGhsa = yield* store.exploits("GHSA-jfh8-c2jp-5v3q", { limit: 5, offset: 0, includeContent: false })
          const byCve = yield* store.exploits("CVE-2021-44228", { limit: 5, offset: 0, includeContent: false })
          assert.deepStrictEqual(byGhsa.summary, byCve.summary)
          assert.isAtMost(byCve.exploits.length, 5)
          assert.isAbove(byCve.count, 5)
        }),
      { timeout: 120_000 }
    )
  })
})
