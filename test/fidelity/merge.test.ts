import { assert, describe, it } from "@effect/vitest"
import { isCveId } from "../../src/ingest/formats/index.ts"
import type { Normalised } from "../../src/ingest/Upstream.ts"
import { assemble, type FoundRecord } from "../../src/vulns/LookupAssembly.ts"
import { recordText } from "../../src/vulns/RecordText.ts"
import { FIXTURES, ingestTree, records } from "../ingest/corpus.ts"
import { validateCve } from "../ingest/cveSchema.ts"

/**
 * `/vuln`'s one record per source, on the assembly both stores share: the
 * stored text passes through untouched when a source has one record that
 * needs no change; several records of a source become one.
 */

type Json = Record<string, any>
type RecordOut = Extract<Normalised, { kind: "record" }>

const corpus = records(ingestTree(FIXTURES).outcomes)
const of = (identifier: string, source?: string): RecordOut =>
  corpus.find((r) => r.identifier === identifier && (source === undefined || r.source === source))!

const at = new Date("2026-01-01T00:00:00Z")
const found = (r: RecordOut, text = recordText(r.record).text): FoundRecord => ({
  source: r.source,
  identifier: r.identifier,
  body: { text, splice: null },
  counts: r.counts,
  gcve: r.gcve,
  enrichedAt: at,
  fetchedAt: at
})

const ours = (record: Json): Json => (record.containers.adp as Array<Json>).find((c) => "x_dataSource" in c)!

describe("one record per source (LookupAssembly)", () => {
  it("passes each source's single stored text through untouched, a native record carrying the queried CVE included", () => {
    const kev = of("CVE-2021-44228", "cisa-kev")
    const ghsa = of("GHSA-jfh8-c2jp-5v3q")
    // Stored text the service would not write itself (spacing): proof that it is not re-serialised.
    const odd = JSON.stringify(kev.record, null, 1)
    const ghsaText = recordText(ghsa.record).text
    const out = assemble("CVE-2021-44228", [], [found(kev, odd), found(ghsa, ghsaText)], [], new Map())
    assert.deepStrictEqual(out.records.map((r) => [r.source, r.recordJson]), [["cisa-kev", odd], ["ghsa", ghsaText]])
    assert.strictEqual(JSON.parse(ghsaText).cveMetadata.cveId, "CVE-2021-44228")
  })

  it("answers a CVE an advisory names besides its first one with that CVE", () => {
    const rustsec = of("RUSTSEC-2023-0060")
    assert.strictEqual((rustsec.record.cveMetadata as Json).cveId, "CVE-2023-4863")
    const [r] = assemble("CVE-2023-5129", [], [found(rustsec)], [], new Map()).records
    const record = JSON.parse(r!.recordJson!)
    assert.strictEqual(record.cveMetadata.cveId, "CVE-2023-5129")
    assert.includeMembers(ours(record).x_aliases, ["CVE-2023-4863", "RUSTSEC-2023-0060", "GHSA-j7hp-h8jx-5ppr"])
    assert.notInclude(ours(record).x_aliases, "CVE-2023-5129")
    assert.isTrue(validateCve(record))
    // Queried by the advisory itself: stored as is.
    const [own] = assemble("RUSTSEC-2023-0060", [], [found(rustsec)], [], new Map()).records
    assert.strictEqual(own!.recordJson, recordText(rustsec.record).text)
  })

  it("merges two advisories of one source: affected, references and problem types unioned, every id in x_aliases", () => {
    const a = of("RUSTSEC-2023-0060")
    const b = of("RUSTSEC-2023-0061")
    const out = assemble("RUSTSEC-2023-0061", [], [found(a), found(b)], [], new Map())
    assert.strictEqual(out.records.length, 1)
    const merged = out.records[0]!
    assert.strictEqual(merged.identifier, "RUSTSEC-2023-0061", "the record filed under the query is the base")
    const record = JSON.parse(merged.recordJson!)
    const cna = record.containers.cna
    const parts = [a, b].map((r) => (r.record.containers as Json).cna as Json)
    for (const p of parts) {
      for (const x of p.affected) assert.deepInclude(cna.affected, x)
      for (const x of p.problemTypes ?? []) assert.deepInclude(cna.problemTypes, x)
    }
    const urls = cna.references.map((r: Json) => r.url)
    assert.deepStrictEqual(
      [...new Set(urls)].sort(),
      [...new Set(parts.flatMap((p) => p.references.map((r: Json) => r.url)))].sort()
    )
    assert.strictEqual(new Set(urls).size, urls.length)
    assert.strictEqual(cna.title, parts[1]!.title)
    assert.includeMembers(ours(record).x_aliases, ["RUSTSEC-2023-0060", "GHSA-j7hp-h8jx-5ppr", "CVE-2023-5129"])
    assert.isTrue(validateCve(record))
    assert.strictEqual(merged.counts.affected, cna.affected.length)
  })

  it("prefers a PUBLISHED base over a REJECTED one, and leaves records read without bodies (/info) alone", () => {
    const nvd = of("CVE-2023-4863")
    const rejected = {
      dataType: "CVE_RECORD",
      dataVersion: "5.1",
      cveMetadata: {
        cveId: "CVE-2023-5129",
        assignerOrgId: (nvd.record.cveMetadata as Json).assignerOrgId,
        state: "REJECTED"
      },
      containers: {
        cna: {
          providerMetadata: { orgId: (nvd.record.cveMetadata as Json).assignerOrgId },
          rejectedReasons: [{ lang: "en", value: "duplicate" }]
        }
      }
    }
    const dup = { ...found(nvd, JSON.stringify(rejected)), identifier: "CVE-2023-5129" }
    const out = assemble("CVE-2023-5129", [], [found(nvd), dup], [], new Map())
    assert.strictEqual(out.records.length, 1)
    const record = JSON.parse(out.records[0]!.recordJson!)
    assert.strictEqual(record.cveMetadata.cveId, "CVE-2023-4863")
    assert.include(ours(record).x_aliases, "CVE-2023-5129")
    assert.isTrue(validateCve(record))
    const keys = assemble("CVE-2023-5129", [], [{ ...found(nvd), body: null }, { ...dup, body: null }], [], new Map())
    assert.strictEqual(keys.records.length, 2)
  })

  it("every corpus record filed under a CVE keeps its text when alone", () => {
    for (const r of corpus.filter((x) => isCveId(x.identifier))) {
      const text = recordText(r.record).text
      const [one] = assemble(r.identifier, [], [found(r, text)], [], new Map()).records
      assert.strictEqual(one!.recordJson, text, r.identifier)
    }
  })
})
