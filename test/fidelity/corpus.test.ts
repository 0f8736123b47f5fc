import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { isCveId } from "../../src/ingest/formats/index.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { ingestData } from "../ingest-store/manifestCheck.ts"
import { FIXTURES, ingestTree, records } from "../ingest/corpus.ts"
import { validateCve, validateRelaxed } from "../ingest/cveSchema.ts"
import { SqlBackends } from "../support/database.ts"

/**
 * Issue 8, "Data fidelity", on every record of the real corpus (test/fixtures/data):
 * ingested with the real pipeline into PostgreSQL, then every identifier the
 * corpus knows is looked up the way `/vuln` does (`recordsOnly`) and every record
 * it would return is checked against the CVE 5.1.1 schema.
 */

type Json = Record<string, any>

const corpus = records(ingestTree(FIXTURES).outcomes)
const identifiers = [...new Set(corpus.flatMap((r) => [r.identifier, ...r.aliases]))].sort()
const cves = identifiers.filter(isCveId)
const others = identifiers.filter((id) => !isCveId(id))

const ours = (record: Json): Json => (record.containers.adp as Array<Json>).find((c) => "x_dataSource" in c)!

const vulnRecords = Effect.fnUntraced(function*(id: string) {
  const found = yield* (yield* VulnStore).lookup(id, { recordsOnly: true })
  return found.records.map((r) => ({
    source: r.source,
    identifier: r.identifier,
    record: JSON.parse(r.recordJson!) as Json
  }))
})

const errors = (validate: typeof validateCve) => JSON.stringify(validate.errors?.slice(0, 2))

describe("data fidelity over the whole fixture corpus (PostgreSQL)", () => {
  layer(VulnStore.layer.pipe(Layer.provideMerge(SqlBackends[0].layer)), {
    excludeTestServices: true,
    timeout: 120_000
  })((it) => {
    it.effect("ingests the fixtures", () =>
      Effect.gen(function*() {
        yield* ingestData
        assert.isAbove(cves.length, 90)
      }), { timeout: 120_000 })

    it.effect(
      "every record /vuln returns for a CVE identifier validates against CVE 5.1.1 unmodified, one per source",
      () =>
        Effect.gen(function*() {
          const failures: Array<string> = []
          let seen = 0
          for (const id of cves) {
            const found = yield* vulnRecords(id)
            const sources = found.map((r) => r.source)
            if (new Set(sources).size !== sources.length) {
              failures.push(`${id}: several records of one source (${sources.join(",")})`)
            }
            for (const { identifier, record, source } of found) {
              seen++
              const cveId = String(record.cveMetadata?.cveId)
              // Filed under another database's id and naming the CVE asked about, the record answers for that CVE.
              if (!isCveId(identifier) && (ours(record).x_aliases as Array<string>).includes(id)) {
                failures.push(`${id} ${source} ${identifier}: cveId ${cveId}, ${id} in x_aliases`)
              }
              if (!validateCve(record)) failures.push(`${id} ${source} ${cveId}: ${errors(validateCve)}`)
            }
          }
          assert.isAbove(seen, cves.length)
          assert.deepStrictEqual(failures, [])
        }),
      { timeout: 60_000 }
    )

    it.effect(
      "a record keeps a native id as cveId only when it aliases no CVE, and names its native ids in x_aliases",
      () =>
        Effect.gen(function*() {
          const failures: Array<string> = []
          for (const id of others) {
            const found = yield* vulnRecords(id)
            const sources = found.map((r) => r.source)
            if (new Set(sources).size !== sources.length) {
              failures.push(`${id}: several records of one source (${sources.join(",")})`)
            }
            for (const { record, source } of found) {
              const cveId = record.cveMetadata.cveId as string
              const aliases = ours(record).x_aliases as Array<string>
              if (!validateRelaxed(record)) failures.push(`${id} ${source}: ${errors(validateRelaxed)}`)
              if (!isCveId(cveId) && aliases.some(isCveId)) {
                failures.push(`${id} ${source}: cveId ${cveId} though it aliases ${aliases.filter(isCveId)}`)
              }
              if (aliases.includes(cveId)) failures.push(`${id} ${source}: x_aliases repeats cveId ${cveId}`)
            }
          }
          // Every stored native record is reachable by its own id and names it: in cveId or in x_aliases.
          for (const r of corpus.filter((r) => !isCveId(r.identifier))) {
            const found = yield* vulnRecords(r.identifier)
            const mine = found.find((f) => f.source === r.source)
            const names = mine === undefined ? [] : [mine.record.cveMetadata.cveId, ...ours(mine.record).x_aliases]
            if (!names.includes(r.identifier)) failures.push(`${r.identifier}: its ${r.source} record does not name it`)
          }
          assert.deepStrictEqual(failures, [])
        }),
      { timeout: 60_000 }
    )

    it.effect("RUSTSEC-2023-0060 and -0061 (one libwebp CVE) are one osv record with both advisories merged", () =>
      Effect.gen(function*() {
        const found = yield* vulnRecords("CVE-2023-4863")
        const osv = found.filter((r) => r.source === "osv")
        assert.strictEqual(osv.length, 1)
        const record = osv[0]!.record
        assert.strictEqual(record.cveMetadata.cveId, "CVE-2023-4863")
        const aliases = ours(record).x_aliases as Array<string>
        for (const a of ["RUSTSEC-2023-0060", "RUSTSEC-2023-0061", "GHSA-j7hp-h8jx-5ppr", "CVE-2023-5129"]) {
          assert.include(aliases, a)
        }
        const upstream = corpus.filter((r) =>
          r.identifier === "RUSTSEC-2023-0060" || r.identifier === "RUSTSEC-2023-0061"
        )
        assert.strictEqual(upstream.length, 2)
        const cna = record.containers.cna as Json
        const urls = (cna.references as Array<Json>).map((r) => r.url)
        assert.strictEqual(new Set(urls).size, urls.length, "references deduplicated")
        for (const u of upstream) {
          const own = (u.record.containers as Json).cna as Json
          for (const p of own.affected) assert.deepInclude(cna.affected, p)
          for (const ref of own.references) assert.include(urls, ref.url)
        }
        // Queried by either advisory: the same merged record.
        const byNative = yield* vulnRecords("RUSTSEC-2023-0061")
        assert.deepStrictEqual(
          byNative.filter((r) => r.source === "osv").map((r) => r.record.containers.cna.affected),
          [cna.affected]
        )
      }))

    const templates = new Map(
      readdirSync(join(FIXTURES, "sources/nuclei")).filter((f) => f.endsWith(".yaml"))
        .map((f) => [f.replace(/\.yaml$/, ""), readFileSync(join(FIXTURES, "sources/nuclei", f), "utf8")] as const)
    )

    const bodiesOf = Effect.fnUntraced(function*(id: string) {
      const page = yield* (yield* VulnStore).exploits(id, { limit: 1000, offset: 0, includeContent: true })
      return page.exploits.flatMap((e) =>
        Object.entries(e.details).flatMap(([key, value]) =>
          (["rawContent", "moduleContent"] as const).flatMap((field) =>
            value[field] === undefined ? [] : [{ key, field, body: value[field] }]
          )
        )
      )
    })

    it.effect("/exploits raw bodies are the exploit's own text, never a JSON re-encoding of a metadata row", () =>
      Effect.gen(function*() {
        assert.isAbove(templates.size, 5)
        const failures: Array<string> = []
        let bodies = 0
        for (const id of cves) {
          for (const { body, field, key } of yield* bodiesOf(id)) {
            bodies++
            if (typeof body !== "string") failures.push(`${id} ${key}.${field} is not text`)
            else if (/^\s*[[{]/.test(body)) failures.push(`${id} ${key}.${field} is JSON: ${body.slice(0, 60)}`)
            // The fixtures ship bodies only as nuclei templates (no exploitdb or metasploit-framework checkout).
            else if (key !== "nuclei" || ![...templates.values()].includes(body)) {
              failures.push(`${id} ${key}.${field} is not a shipped template`)
            }
          }
        }
        assert.isAtLeast(bodies, templates.size - 1)
        assert.deepStrictEqual(failures, [])
      }))

    // CVE-2018-13379: its cves.json line has the longer details, so the store serves that row; the body is the
    // template's, found under whichever row of the same uuid holds it.
    it.effect("every nuclei template of the fixtures is served as rawContent", () =>
      Effect.gen(function*() {
        const missing: Array<string> = []
        for (const [id, template] of templates) {
          if (!(yield* bodiesOf(id)).some((b) => b.key === "nuclei" && b.body === template)) missing.push(id)
        }
        assert.deepStrictEqual(missing, [])
      }))
  })
})
