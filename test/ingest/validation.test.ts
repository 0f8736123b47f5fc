import { describe, expect, it } from "vitest"
import { isCveId } from "../../src/ingest/formats/index.ts"
import { FIXTURES, ingestTree, records } from "./corpus.ts"
import { validateCve, validateRelaxed } from "./cveSchema.ts"

const tree = ingestTree(FIXTURES)
const all = records(tree.outcomes)

describe("normalised records against CVE Record Format 5.1.1", () => {
  it("reads the fixture tree without a problem", () => {
    expect(tree.problems).toEqual([])
    expect(tree.outcomes.filter((o) => "reason" in o.result)).toEqual([])
    expect(all.length).toBeGreaterThan(150)
  })

  it("every CVE record validates unmodified; every other record with the cveId relaxation only", () => {
    const failures: Array<string> = []
    for (const r of all) {
      const cve = isCveId(r.identifier)
      const validate = cve ? validateCve : validateRelaxed
      if (!validate(r.record)) {
        failures.push(`${r.upstream} ${r.identifier}: ${JSON.stringify(validate.errors?.slice(0, 3))}`)
      }
    }
    expect(failures).toEqual([])
  })

  it("records are CVE_RECORD 5.1 with one vdb enrichment container", () => {
    for (const r of all) {
      expect(r.record.dataType).toBe("CVE_RECORD")
      expect(r.record.dataVersion).toBe("5.1")
      const adp = (r.record.containers as { adp: Array<Record<string, unknown>> }).adp
      const ours = adp.filter((c) => "x_dataSource" in c)
      expect(ours).toHaveLength(1)
      expect(ours[0]!.x_dataSource).toBe(r.source)
      expect(Array.isArray(ours[0]!.x_aliases)).toBe(true)
    }
  })

  it("the relaxation does not let a malformed id through", () => {
    const r = all.find((x) => x.identifier.startsWith("GHSA-"))!
    const bad = { ...r.record, cveMetadata: { ...(r.record.cveMetadata as object), cveId: "not an id" } }
    expect(validateRelaxed(bad)).toBe(false)
    expect(validateCve(r.record)).toBe(false)
  })
})
