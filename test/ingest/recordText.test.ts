import { assert, describe, it } from "@effect/vitest"
import { withEpss } from "../../src/ingest/formats/adp.ts"
import { recordText, textWithEpss } from "../../src/vulns/RecordText.ts"
import { FIXTURES, ingestTree, records } from "./corpus.ts"

const score = { cve: "CVE-2021-44228", score: 0.97, percentile: 0.999, date: "2026-09-29", modelVersion: "v2025.03.14" }

describe("stored record text and the read-time EPSS splice", () => {
  const all = records(ingestTree(FIXTURES).outcomes)

  it("is JSON.stringify of the record, and the splice equals merging EPSS into the parsed record", () => {
    assert.isAtLeast(all.length, 150)
    for (const r of all) {
      const stored = recordText(r.record)
      assert.strictEqual(stored.text, JSON.stringify(r.record), r.identifier)
      assert.isNotNull(stored.splice, r.identifier)
      assert.strictEqual(
        textWithEpss(stored, score),
        JSON.stringify(withEpss(r.record, score)),
        `${r.source} ${r.identifier}`
      )
      assert.strictEqual(textWithEpss(stored, undefined), stored.text)
    }
  })

  it("falls back to parsing when no splice is known, and leaves a record without enrichment as it is", () => {
    const r = all[0]!.record
    assert.strictEqual(
      textWithEpss({ text: JSON.stringify(r), splice: null }, score),
      JSON.stringify(withEpss(r, score))
    )
    const bare = { dataType: "CVE_RECORD", containers: { cna: {} } }
    assert.deepStrictEqual(recordText(bare), { text: JSON.stringify(bare), splice: [] })
    assert.strictEqual(textWithEpss(recordText(bare), score), JSON.stringify(bare))
  })
})
