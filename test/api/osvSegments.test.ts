import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { gunzipSync } from "node:zlib"
import { versionOrder } from "../../src/versions/VersionOrder.ts"
import { isAffected } from "../../src/vulns/AffectedVersion.ts"
import { packagesOf } from "../../src/vulns/OsvForm.ts"
import type { PackageRecord } from "../../src/vulns/PackageIndex.ts"
import { PackageSegments } from "../../src/vulns/PackageSegments.ts"

/**
 * The package answers kept per version position (`PackageSegments`) agree with
 * the schema's range walk record by record (`AffectedVersion.isAffected`), on
 * every record of the OSV corpus and on hand-made edge cases.
 */
const CORPUS = ["go-vulndb", "rustsec", "pysec"].flatMap((name) =>
  gunzipSync(readFileSync(fileURLToPath(new URL(`../fixtures/osv-corpus/${name}.ndjson.gz`, import.meta.url))))
    .toString("utf8").split("\n").filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>)
)

/** Each package's records as the index reads them: one per identifier, in identifier order. */
const packagesOfRecords = (records: ReadonlyArray<Record<string, unknown>>) => {
  const byPackage = new Map<string, { base: string; records: Map<string, PackageRecord> }>()
  for (const osv of records) {
    const id = osv.id as string
    for (const entry of packagesOf(osv)) {
      let pkg = byPackage.get(entry.key)
      if (pkg === undefined) byPackage.set(entry.key, pkg = { base: entry.base, records: new Map() })
      let record = pkg.records.get(id)
      if (record === undefined) {
        pkg.records.set(
          id,
          record = {
            id,
            modified: "",
            brief: id,
            key: { source: "osv", identifier: id, originSource: "osv", originIdentifier: id },
            entries: []
          }
        )
      }
      ;(record.entries as Array<unknown>).push({
        ecosystem: entry.ecosystem,
        ranges: entry.ranges,
        versions: entry.versions
      })
    }
  }
  return [...byPackage.values()].map(({ base, records }) => ({
    base,
    records: [...records.values()].sort((a, b) => (a.id < b.id ? -1 : 1))
  }))
}

/** What the reference walk answers, as identifiers. */
const reference = (base: string, records: ReadonlyArray<PackageRecord>, release: string | undefined, v: string) => {
  const order = Result.getOrUndefined(versionOrder(base))
  const parsed = order === undefined ? undefined : Result.getOrUndefined(order.parse(v))
  return records.filter((r) =>
    r.entries.some((e) =>
      (release === undefined || e.ecosystem.toLowerCase() === release) && isAffected(e, v, order, parsed)
    )
  ).map((r) => r.id)
}

const answered = (pkg: PackageSegments, release: string | undefined, v: string) =>
  Array.from(pkg.matched(release, v).positions, (n) => pkg.records[n]!.id)

/** Every bound of the package and versions just beside them; the first and last two listed versions of each entry. */
const candidates = (records: ReadonlyArray<PackageRecord>) => {
  const texts = new Set<string>(["0", "0.0.0", "999999"])
  for (const r of records) {
    for (const e of r.entries) {
      for (const v of [...e.versions.slice(0, 2), ...e.versions.slice(-2)]) texts.add(v)
      for (const range of e.ranges) {
        for (const event of range.events) {
          const t = Object.values(event)[0] as string
          for (const near of [t, `${t}.1`, `${t}-1`]) texts.add(near)
        }
      }
    }
  }
  return texts
}

const agree = (base: string, records: ReadonlyArray<PackageRecord>, releases: ReadonlyArray<string | undefined>) => {
  const wrong: Array<string> = []
  const pkg = new PackageSegments(base, records)
  let checked = 0
  for (const release of releases) {
    for (const v of candidates(records)) {
      // Texts of one position after the first are answered from what the first kept.
      const expected = reference(base, records, release, v)
      const got = answered(pkg, release, v)
      if (expected.join() !== got.join()) wrong.push(`${base} ${release ?? ""} ${v}: ${got} for ${expected}`)
      checked++
    }
  }
  return { wrong, checked }
}

const record = (id: string, entries: ReadonlyArray<Record<string, unknown>>): PackageRecord => ({
  id,
  modified: "",
  brief: id,
  key: { source: "osv", identifier: id, originSource: "osv", originIdentifier: id },
  entries: entries as unknown as PackageRecord["entries"]
})

describe("package answers by version position", () => {
  it("agree with the range walk on every package of the OSV corpus", () => {
    let checked = 0
    const wrong: Array<string> = []
    for (const { base, records } of packagesOfRecords(CORPUS)) {
      const result = agree(base, records, [undefined])
      checked += result.checked
      wrong.push(...result.wrong)
    }
    assert.isAbove(checked, 20_000)
    assert.deepStrictEqual(wrong.slice(0, 20), [], `${wrong.length} of ${checked} wrong`)
  }, 120_000)

  it("agree on releases, limits, last_affected, equal spellings, unreadable bounds and listed versions", () => {
    const semver = (events: ReadonlyArray<Record<string, string>>) => ({ type: "SEMVER", events })
    const eco = (events: ReadonlyArray<Record<string, string>>) => ({ type: "ECOSYSTEM", events })
    const debian = [
      record("DSA-1", [
        { ecosystem: "Debian:11", ranges: [eco([{ introduced: "0" }, { fixed: "1.2-1" }])], versions: [] },
        { ecosystem: "Debian:12", ranges: [eco([{ introduced: "1.0-1" }, { fixed: "1.3-1" }])], versions: ["0.9-1"] }
      ]),
      record("DSA-2", [{
        ecosystem: "Debian:12",
        ranges: [eco([{ introduced: "1.2-1" }, { last_affected: "1.4-1" }])],
        versions: []
      }]),
      record("DSA-3", [{ ecosystem: "Debian", ranges: [eco([{ introduced: "0" }, { limit: "1.1-1" }])], versions: [] }])
    ]
    const pypi = [
      record("PYSEC-1", [{
        ecosystem: "PyPI",
        ranges: [eco([{ introduced: "1.0" }, { fixed: "2.0.0" }])],
        versions: []
      }]),
      record("PYSEC-2", [{
        ecosystem: "PyPI",
        ranges: [eco([{ introduced: "1.0.0" }, { fixed: "not a version" }, { introduced: "3.0" }, { fixed: "3.1" }])],
        versions: ["not a version", "2.5"]
      }]),
      record("PYSEC-3", [{
        ecosystem: "PyPI",
        ranges: [eco([{ introduced: "0" }]), { type: "GIT", events: [{ introduced: "abc" }] }],
        versions: []
      }]),
      record("PYSEC-4", [{
        ecosystem: "PyPI",
        ranges: [eco([{ introduced: "1.5" }, { fixed: "1.7" }, { introduced: "1.7" }, { fixed: "1.9" }])],
        versions: []
      }])
    ]
    const npm = [
      record("GHSA-1", [{
        ecosystem: "npm",
        ranges: [semver([{ introduced: "1.0.0" }, { limit: "2.0.0" }, { limit: "1.5.0" }])],
        versions: []
      }])
    ]
    const results = [
      agree("Debian", debian, [undefined, "debian:11", "debian:12", "debian"]),
      agree("PyPI", pypi, [undefined]),
      agree("npm", npm, [undefined])
    ]
    assert.deepStrictEqual(results.flatMap((r) => r.wrong), [])
    // The cases the walk has to get right, spelled out.
    const deb = new PackageSegments("Debian", debian)
    assert.deepStrictEqual(answered(deb, "debian:12", "1.4-1"), ["DSA-2"])
    assert.deepStrictEqual(answered(deb, "debian:12", "0.9-1"), ["DSA-1"])
    assert.deepStrictEqual(answered(deb, undefined, "1.0-1"), ["DSA-1", "DSA-3"])
    const py = new PackageSegments("PyPI", pypi)
    assert.deepStrictEqual(answered(py, undefined, "1.0"), ["PYSEC-1", "PYSEC-2", "PYSEC-3"])
    assert.deepStrictEqual(answered(py, undefined, "2.0"), ["PYSEC-2", "PYSEC-3"])
    assert.deepStrictEqual(answered(py, undefined, "1.6"), ["PYSEC-1", "PYSEC-2", "PYSEC-3", "PYSEC-4"])
    assert.deepStrictEqual(Array.from(py.matched(undefined, undefined).positions), [0, 1, 2, 3])
  })
})
