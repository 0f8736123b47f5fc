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

  it("every record carrying a CVE validates unmodified; one keeping its native id with the cveId relaxation only", () => {
    const failures: Array<string> = []
    for (const r of all) {
      const cveId = (r.record.cveMetadata as { cveId: string }).cveId
      // A native record (GHSA, RUSTSEC, EUVD, ...) carries the CVE it aliases; only one aliasing none keeps its own id.
      const expected = isCveId(r.identifier) ? r.identifier : r.aliases.filter(isCveId).sort()[0] ?? r.identifier
      if (cveId !== expected) failures.push(`${r.upstream} ${r.identifier}: cveId ${cveId}, expected ${expected}`)
      const validate = isCveId(cveId) ? validateCve : validateRelaxed
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
    const r = all.find((x) => x.identifier.startsWith("RUSTSEC-") && !x.aliases.some(isCveId))!
    expect((r.record.cveMetadata as { cveId: string }).cveId).toBe(r.identifier)
    const bad = { ...r.record, cveMetadata: { ...(r.record.cveMetadata as object), cveId: "not an id" } }
    expect(validateRelaxed(bad)).toBe(false)
    expect(validateCve(r.record)).toBe(false)
  })
})
