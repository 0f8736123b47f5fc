import { assert, describe, layer } from "@effect/vitest"
import { Effect, Fiber, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { ORG } from "../../src/ingest/formats/ids.ts"
import type { Normalised } from "../../src/ingest/Upstream.ts"
import { lookupStatement } from "../../src/vulns/SqlVulnReads.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import type { NormalisedItem, RawItem } from "../../src/vulns/VulnStoreShapes.ts"
import { SqlBackends } from "../support/database.ts"

const backends = [
  ...SqlBackends.map(({ layer, name }) => ({ name, layer: VulnStore.layer.pipe(Layer.provideMerge(layer)) })),
  { name: "memory", layer: VulnStore.layerMemory }
]

const counts = { references: 2, problemTypes: 1, metrics: 1, affected: 1, impacts: 0, descriptions: 1, scorecards: 0 }

const cveRecord = (id: string, source: string, dateUpdated: string) => ({
  dataType: "CVE_RECORD",
  dataVersion: "5.1",
  cveMetadata: { cveId: id, state: "PUBLISHED", dateUpdated },
  containers: {
    cna: { title: `${id} via ${source}` },
    adp: [{ providerMetadata: { orgId: ORG.vdb.orgId, shortName: "vdb" }, title: "enrichment", x_dataSource: source }]
  }
})

const raw = (source: string, identifier: string, content = `{"id":"${identifier}"}`): RawItem => ({
  source,
  identifier,
  content,
  hash: `h:${content}`
})

const done = (item: RawItem, outputs: ReadonlyArray<Normalised>): NormalisedItem => ({
  source: item.source,
  identifier: item.identifier,
  hash: item.hash,
  outputs
})

const record = (
  source: "mitre" | "ghsa" | "osv" | "cisa-kev",
  identifier: string,
  aliases: ReadonlyArray<string> = [],
  dateUpdated = "2024-01-01T00:00:00Z"
): Normalised => ({
  kind: "record",
  source,
  upstream: source,
  identifier,
  record: cveRecord(identifier, source, dateUpdated),
  aliases,
  counts,
  gcve: false
})

const exploit = (
  uuid: string,
  cveId: string,
  source: string,
  createdAt: number,
  details: Record<string, Record<string, unknown>>,
  rawBody?: string
) => ({
  uuid,
  cveId,
  source,
  type: "exploit" as const,
  url: `https://example.test/${uuid}`,
  title: `exploit ${uuid}`,
  createdAt,
  details,
  ...(rawBody === undefined ? {} : { raw: rawBody })
})

describe.each(backends)("VulnStore ($name)", ({ layer: backend }) => {
  layer(backend, { excludeTestServices: true })((it) => {
    it.effect("stores raw first (processing), then normalised records resolved through aliases", () =>
      Effect.gen(function*() {
        const store = yield* VulnStore
        const mitre = raw("mitre", "CVE-2021-0001")
        const ghsa = raw("ghsa", "GHSA-aaaa-bbbb-cccc")
        const osv = raw("osv", "PYSEC-2021-1")
        const first = yield* store.putRaw([mitre, ghsa, osv])
        assert.deepStrictEqual(first.map((r) => r.outcome), ["inserted", "inserted", "inserted"])
        assert.isTrue(first.every((r) => r.pending))

        const processing = yield* store.lookup("CVE-2021-0001")
        assert.deepStrictEqual(processing.records.map((r) => [r.source, r.record]), [["mitre", null]])
        assert.deepStrictEqual(processing.records.map((r) => [r.processing, r.recordJson]), [[true, null]])

        yield* store.putNormalised([
          { ...done(mitre, [record("mitre", "CVE-2021-0001")]), fresh: true },
          done(ghsa, [record("ghsa", "GHSA-aaaa-bbbb-cccc", ["CVE-2021-0001"])]),
          done(osv, [record("osv", "PYSEC-2021-1", ["GHSA-aaaa-bbbb-cccc"])]),
          done(raw("epss", "CVE-2021-0001"), [{
            kind: "epss",
            scores: [{
              cve: "CVE-2021-0001",
              score: 0.5,
              percentile: 0.75,
              date: "2026-09-29",
              modelVersion: "v2026.06.15"
            }]
          }])
        ], [])
        const found = yield* store.lookup("CVE-2021-0001")
        assert.deepStrictEqual(found.aliases, ["GHSA-aaaa-bbbb-cccc", "PYSEC-2021-1"])
        assert.deepStrictEqual(found.records.map((r) => r.source).sort(), ["ghsa", "mitre", "osv"])
        const m = found.records.find((r) => r.source === "mitre")!
        assert.deepStrictEqual(m.counts, counts)
        const adp = (m.record!.containers as { adp: Array<Record<string, unknown>> }).adp
        assert.include(adp[0]!.x_dataCollected as Array<string>, "epss")
        assert.deepStrictEqual(adp[0]!.x_epss, {
          score: 0.5,
          percentile: 0.75,
          date: "2026-09-29",
          modelVersion: "v2026.06.15"
        })
        assert.instanceOf(m.fetchedAt, Date)
        // The stored text with EPSS spliced in is what `record` parses to; bodies: false reads none of it.
        assert.isFalse(m.processing)
        assert.deepStrictEqual(JSON.parse(m.recordJson!), m.record)
        const keys = yield* store.lookup("CVE-2021-0001", { bodies: false })
        assert.deepStrictEqual(keys.aliases, found.aliases)
        assert.deepStrictEqual(
          keys.records.map((r) => [r.source, r.identifier, r.processing, r.recordJson, r.record, r.counts]),
          found.records.map((r) => [r.source, r.identifier, false, null, null, r.counts])
        )

        const byAlias = yield* store.lookup("GHSA-aaaa-bbbb-cccc")
        assert.deepStrictEqual(byAlias.aliases, ["CVE-2021-0001", "PYSEC-2021-1"])
        assert.strictEqual(byAlias.records.length, 3)

        const again = yield* store.putRaw([mitre, ghsa, osv])
        assert.deepStrictEqual(again, [
          { outcome: "unchanged", pending: false },
          { outcome: "unchanged", pending: false },
          { outcome: "unchanged", pending: false }
        ])
        const nothing = yield* store.lookup("CVE-1999-9999")
        assert.deepStrictEqual(nothing, { aliases: [], records: [] })
      }))

    it.effect("keeps one record per source: the newest of the items that normalise to it", () =>
      Effect.gen(function*() {
        const store = yield* VulnStore
        const older = raw("mitre", "CVE-2022-0002")
        const newer = raw("vulnrichment", "CVE-2022-0002")
        yield* store.putRaw([newer, older])
        yield* store.putNormalised([
          done(newer, [record("mitre", "CVE-2022-0002", [], "2024-10-24T00:00:00Z")]),
          done(older, [record("mitre", "CVE-2022-0002", [], "2023-01-01T00:00:00Z")])
        ], [])
        const found = yield* store.lookup("CVE-2022-0002")
        assert.strictEqual(found.records.length, 1)
        assert.strictEqual(
          (found.records[0]!.record!.cveMetadata as { dateUpdated: string }).dateUpdated,
          "2024-10-24T00:00:00Z"
        )
      }))

    it.effect("a changed item is pending again; a failure stays processing and is listed", () =>
      Effect.gen(function*() {
        const store = yield* VulnStore
        const v1 = raw("ghsa", "GHSA-xxxx-yyyy-zzzz", "{\"v\":1}")
        yield* store.putRaw([v1])
        yield* store.putNormalised([done(v1, [record("ghsa", "GHSA-xxxx-yyyy-zzzz", ["CVE-2023-0003"])])], [])
        assert.strictEqual((yield* store.lookup("CVE-2023-0003")).records.length, 1)
        const v2 = raw("ghsa", "GHSA-xxxx-yyyy-zzzz", "{\"v\":2}")
        assert.deepStrictEqual(yield* store.putRaw([v2]), [{ outcome: "updated", pending: true }])
        yield* store.putNormalised([], [{ ...v2, position: "ghsa/x.json", reason: "impossible date" }])
        const failedNow = yield* store.failed()
        assert.deepStrictEqual(failedNow.map((f) => [f.identifier, f.position, f.reason]), [[
          "GHSA-xxxx-yyyy-zzzz",
          "ghsa/x.json",
          "impossible date"
        ]])
        const processing = yield* store.lookup("GHSA-xxxx-yyyy-zzzz")
        assert.deepStrictEqual(processing.records.map((r) => [r.source, r.record]), [["ghsa", null]])
        assert.deepStrictEqual(processing.aliases, [], "the failed item's old aliases are gone")
        assert.deepStrictEqual(yield* store.putRaw([v2]), [{ outcome: "unchanged", pending: true }])
        yield* store.putNormalised([done(v2, [record("ghsa", "GHSA-xxxx-yyyy-zzzz")])], [])
        assert.deepStrictEqual(yield* store.failed(), [])
      }))

    it.effect("two ingestions of one item: the output of a version stored over since is skipped, never served", () =>
      Effect.gen(function*() {
        const store = yield* VulnStore
        // Both raw phases ran, Y last; then their phase 2s, Y's first and X's (stale) second, as two processes did.
        const x = raw("ghsa", "GHSA-race-race-race", "{\"v\":\"x\"}")
        const y = raw("ghsa", "GHSA-race-race-race", "{\"v\":\"y\"}")
        yield* store.putRaw([x])
        yield* store.putRaw([y])
        const recordOf = (version: string) =>
          record(
            "ghsa",
            "GHSA-race-race-race",
            [`CVE-2024-000${version === "x" ? 1 : 2}`],
            `2024-01-0${version === "x" ? 1 : 2}T00:00:00Z`
          )
        assert.strictEqual(yield* store.putNormalised([done(y, [recordOf("y")])], []), 1)
        // Reported as not stored, so that ingestion's summary does not count it as normalised.
        assert.strictEqual(yield* store.putNormalised([done(x, [recordOf("x")])], []), 0)
        const served = yield* store.lookup("GHSA-race-race-race")
        assert.deepStrictEqual(
          served.records.map((r) => (r.record!.cveMetadata as { dateUpdated: string }).dateUpdated),
          ["2024-01-02T00:00:00Z"]
        )
        assert.deepStrictEqual(served.aliases, ["CVE-2024-0002"])
        // Nothing pending: Y, the stored version, is the one normalised.
        assert.deepStrictEqual(yield* store.putRaw([y]), [{ outcome: "unchanged", pending: false }])
        // A stale failure is skipped too, and does not list the item as failed.
        yield* store.putNormalised([], [{ ...x, position: "ghsa/x.json", reason: "impossible date" }])
        assert.deepStrictEqual(yield* store.failed(), [])
      }))

    it.effect("exploits: summary over the whole set, newest first, paged, bodies only on request", () =>
      Effect.gen(function*() {
        const store = yield* VulnStore
        const csv = raw("exploit-db", "EDB-1")
        const map = raw("exploit-db", "CVE-2024-0004")
        const msf = raw("metasploit", "CVE-2024-0004")
        yield* store.putRaw([csv, map, msf])
        yield* store.putNormalised([
          done(csv, [{
            kind: "exploits",
            summaryKey: "exploitDb",
            exploits: [
              exploit("00000000-0000-5000-8000-000000000001", "CVE-2024-0004", "exploit-db", 300, {
                exploitDb: { id: "1", author: "someone", platform: "java" }
              }, "print('x')")
            ]
          }]),
          done(map, [{
            kind: "exploits",
            summaryKey: "exploitDb",
            exploits: [
              exploit("00000000-0000-5000-8000-000000000001", "CVE-2024-0004", "exploit-db", 300, {
                exploitDb: { id: "1" }
              })
            ]
          }]),
          done(msf, [{
            kind: "exploits",
            summaryKey: "metasploit",
            exploits: [
              exploit("00000000-0000-5000-8000-000000000002", "CVE-2024-0004", "metasploit", 200, {
                metasploit: { modulePath: "a.rb" }
              }, "class A"),
              exploit("00000000-0000-5000-8000-000000000003", "CVE-2024-0004", "metasploit", 100, {
                metasploit: { modulePath: "b.rb" }
              })
            ]
          }])
        ], [])
        const page = yield* store.exploits("CVE-2024-0004", { limit: 2, offset: 0, includeContent: false })
        assert.strictEqual(page.count, 3)
        assert.deepStrictEqual([page.summary.exploitDb, page.summary.metasploit, page.summary.github], [1, 2, 0])
        assert.deepStrictEqual(page.exploits.map((e) => e.createdAt), [300, 200])
        assert.deepStrictEqual(page.exploits[0]!.details, {
          exploitDb: { id: "1", author: "someone", platform: "java" }
        })
        const rest = yield* store.exploits("CVE-2024-0004", { limit: 2, offset: 2, includeContent: true })
        assert.deepStrictEqual(rest.exploits.map((e) => e.details), [{ metasploit: { modulePath: "b.rb" } }])
        const full = yield* store.exploits("CVE-2024-0004", { limit: 10, offset: 0, includeContent: true })
        assert.strictEqual(full.exploits[0]!.details.exploitDb!.rawContent, "print('x')")
        assert.strictEqual(full.exploits[1]!.details.metasploit!.moduleContent, "class A")
        const none = yield* store.exploits("CVE-1999-0000", { limit: 10, offset: 0, includeContent: false })
        assert.deepStrictEqual([none.count, none.exploits.length, none.summary.other], [0, 0, 0])
      }))

    it.effect("publishes touched identifiers", () =>
      Effect.gen(function*() {
        const store = yield* VulnStore
        const fiber = yield* store.touched.pipe(Stream.take(2), Stream.runCollect, Effect.forkChild)
        yield* Effect.yieldNow
        yield* Effect.sleep("10 millis")
        const item = raw("cisa-kev", "CVE-2025-0005")
        yield* store.putRaw([item])
        yield* store.putNormalised([done(item, [record("cisa-kev", "CVE-2025-0005")])], [])
        const seen = yield* Fiber.join(fiber)
        assert.deepStrictEqual(seen.map((ids) => [...ids].sort()), [["CVE-2025-0005"], ["CVE-2025-0005"]])
      }))
  })
})

describe("VulnStore on PostgreSQL", () => {
  layer(VulnStore.layer.pipe(Layer.provideMerge(SqlBackends[0].layer)), { excludeTestServices: true })((it) => {
    it.effect("the lookup statement (alias walk, records, processing items, EPSS) is index-backed in every branch", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // An empty table is scanned sequentially whatever the indexes: forbid it to see which index serves.
        yield* sql`SET enable_seqscan = off`
        const plan = yield* sql<{ "QUERY PLAN": string }>`EXPLAIN ${lookupStatement(sql, "CVE-2021-44228", true)}`
        yield* sql`RESET enable_seqscan`
        const text = plan.map((r) => r["QUERY PLAN"]).join("\n")
        // A pair is one row (migration 0560): each step of the walk reads it from either end.
        assert.match(text, /Index (Only )?Scan (using|on) vuln_aliases_pkey/)
        assert.match(text, /Index (Only )?Scan (using|on) vuln_aliases_alias/)
        assert.match(text, /Index Scan (using|on) vuln_records_identifier/)
        assert.match(text, /Index Scan (using|on) vuln_raw_identifier/)
        assert.match(text, /Index (Only )?Scan (using|on) vuln_records_pkey/)
        assert.match(text, /Index Scan (using|on) vuln_epss_pkey/)
        assert.notMatch(text, /Seq Scan/)
      }))
  })
})
