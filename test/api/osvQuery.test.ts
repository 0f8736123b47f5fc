import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { readdirSync, readFileSync } from "node:fs"
import { Organizations } from "../../src/orgs/Organizations.ts"
import type { SecretBox } from "../../src/secrets/SecretBox.ts"
import type { VulnStore } from "../../src/vulns/VulnStore.ts"
import { SqlBackends } from "../support/database.ts"
import { clientFor, serveApi } from "./harness.ts"
import { get, ingestText, osvDeps, osvValidator, post } from "./osvSupport.ts"

const FIXTURES = new URL("../fixtures/data/sources/", import.meta.url)
const fixtureRecords = (dir: string) =>
  readdirSync(new URL(`${dir}/`, FIXTURES)).filter((f) => f.endsWith(".json"))
    .map((f) => JSON.parse(readFileSync(new URL(`${dir}/${f}`, FIXTURES), "utf8")) as Record<string, any>)

const OSV = fixtureRecords("osv")
const GHSA = fixtureRecords("ghsa")

/** A CVE record from a source without OSV: its `collectionURL` + `packageName` name a PyPI package. */
const cveRecord = (fixed: string) => ({
  dataType: "CVE_RECORD",
  dataVersion: "5.1",
  cveMetadata: {
    cveId: "CVE-2031-0001",
    assignerOrgId: "8254265b-2729-46b6-b9e3-3dfca2d5bfca",
    state: "PUBLISHED",
    datePublished: "2031-01-01T00:00:00",
    dateUpdated: `2031-01-0${fixed === "1.5" ? 2 : 3}T00:00:00`
  },
  containers: {
    cna: {
      providerMetadata: { orgId: "8254265b-2729-46b6-b9e3-3dfca2d5bfca", shortName: "mitre" },
      title: "demo flaw",
      descriptions: [{ lang: "en", value: "A demo flaw in Vdb_Demo.Pkg." }],
      affected: [{
        collectionURL: "https://pypi.org/",
        packageName: "Vdb_Demo.Pkg",
        defaultStatus: "unaffected",
        versions: [{ version: "1.0", status: "affected", lessThan: fixed, versionType: "python" }, {
          version: "0.9.1",
          status: "affected"
        }]
      }],
      references: [{ url: "https://example.com/advisory" }]
    }
  }
})

type Deps = Organizations | VulnStore | SqlClient.SqlClient | SecretBox

const setUp = Effect.gen(function*() {
  const ctx = yield* Effect.context<Deps>()
  const base = yield* serveApi(Layer.succeedContext(ctx))
  const org = yield* Effect.flatMap(Organizations, (orgs) => orgs.create({ name: "osv", perMinute: 0, perWeek: 0 }))
  const client = yield* clientFor(base, org.uuid, org.secret, "apiKey")
  return { base, org, client }
})

const ids = (vulns: ReadonlyArray<Record<string, unknown>>) => vulns.map((v) => v.id as string)

describe.each(SqlBackends)("OSV-compatible package queries ($name)", ({ layer: backend }) => {
  layer(osvDeps(backend), { excludeTestServices: true, timeout: 90_000 })((it) => {
    it.effect("fixtures: enumerated versions match, fixed ones do not; answers validate against the OSV schema", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, client, org } = yield* setUp
        yield* ingestText("osv", "osv.ndjson", OSV.map((r) => JSON.stringify(r)).join("\n"))
        yield* ingestText("ghsa", "ghsa.ndjson", GHSA.map((r) => JSON.stringify(r)).join("\n"))
        const validate = osvValidator()
        let checked = 0
        for (const record of [...OSV, ...GHSA]) {
          for (const affected of record.affected ?? []) {
            const pkg = { ecosystem: affected.package.ecosystem, name: affected.package.name }
            for (const version of (affected.versions ?? []).slice(0, 20)) {
              const answer = yield* client.osv.query({ payload: { package: pkg, version } })
              assert.include(ids(answer.vulns), record.id, `${record.id} ${pkg.name} ${version}`)
              for (const vuln of answer.vulns) assert.isTrue(validate(vuln), JSON.stringify(validate.errors))
              checked++
            }
            for (const range of affected.ranges ?? []) {
              if (range.type === "GIT") continue
              for (const event of range.events) {
                if (event.fixed === undefined) continue
                // Covered by another range or listed of this record: allowed to match.
                const listed = (record.affected ?? []).some((a: any) =>
                  a.package.name === pkg.name && (a.versions ?? []).includes(event.fixed)
                )
                const reopened = (record.affected ?? []).some((a: any) =>
                  a.package.name === pkg.name &&
                  (a.ranges ?? []).some((r: any) => r.events.some((e: any) => e.introduced === event.fixed))
                )
                if (listed || reopened) continue
                const answer = yield* client.osv.query({ payload: { package: pkg, version: event.fixed } })
                assert.notInclude(ids(answer.vulns), record.id, `${record.id} ${pkg.name} fixed ${event.fixed}`)
                checked++
              }
            }
          }
        }
        assert.isAbove(checked, 20)
        // Log4Shell through a purl, and without a version: every record of the package.
        const log4j = yield* client.osv.query({
          payload: { package: { purl: "pkg:maven/org.apache.logging.log4j/log4j-core@2.14.1" } }
        })
        assert.include(ids(log4j.vulns), "GHSA-jfh8-c2jp-5v3q")
        const patched = yield* client.osv.query({
          payload: { package: { purl: "pkg:maven/org.apache.logging.log4j/log4j-core@2.17.1" } }
        })
        assert.notInclude(ids(patched.vulns), "GHSA-jfh8-c2jp-5v3q")
        const all = yield* client.osv.query({
          payload: { package: { ecosystem: "maven", name: "org.apache.logging.log4j:log4j-core" } }
        })
        assert.include(ids(all.vulns), "GHSA-jfh8-c2jp-5v3q")
        // The record itself, by any form /vuln accepts, with an entity tag.
        const one = yield* get(base, org, "/vulns/ghsa-JFH8-c2jp-5v3q")
        assert.strictEqual(one.status, 200)
        assert.strictEqual(one.body.id, "GHSA-jfh8-c2jp-5v3q")
        assert.isTrue(validate(one.body), JSON.stringify(validate.errors))
        const etag = one.headers.get("etag")!
        assert.strictEqual((yield* get(base, org, "/vulns/GHSA-jfh8-c2jp-5v3q", { "if-none-match": etag })).status, 304)
        assert.strictEqual((yield* get(base, org, "/vulns/CVE-1999-0001")).status, 404)
        // Batch: {id, modified} per query, in order.
        const batch = yield* client.osv.querybatch({
          payload: {
            queries: [{ package: { purl: "pkg:maven/org.apache.logging.log4j/log4j-core@2.14.1" } }, {
              package: { ecosystem: "PyPI", name: "no-such-package" },
              version: "1.0"
            }]
          }
        })
        assert.strictEqual(batch.results.length, 2)
        assert.include(batch.results[0]!.vulns.map((v) => v.id), "GHSA-jfh8-c2jp-5v3q")
        assert.deepStrictEqual(batch.results[1]!.vulns, [])
      })))

    it.effect("refusals: commit queries, unsupported ecosystems, limits, in the API's error dialect", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, org } = yield* setUp
        const commit = yield* post(base, org, "/query", { commit: "6879efc2c1596d11a6a6ad296f80063b558d5e0f" })
        assert.deepStrictEqual(commit.body, {
          success: false,
          error: "commit queries are not supported; query by package and version"
        })
        assert.strictEqual(commit.status, 400)
        const unknown = yield* post(base, org, "/query", { package: { ecosystem: "Nowhere", name: "x" }, version: "1" })
        assert.strictEqual(unknown.status, 400)
        assert.match(unknown.body.error, /ecosystem "Nowhere" is not supported/)
        const unordered = yield* post(base, org, "/query", {
          package: { ecosystem: "GitHub Actions", name: "a/b" },
          version: "1"
        })
        assert.strictEqual(unordered.status, 400)
        assert.match(unordered.body.error, /not supported for version ordering/)
        const badPurl = yield* post(base, org, "/query", { package: { purl: "npm/left-pad" } })
        assert.strictEqual(badPurl.status, 400)
        assert.match(badPurl.body.error, /invalid purl/)
        const tooMany = yield* post(base, org, "/querybatch", {
          queries: Array.from({ length: 1001 }, () => ({ package: { ecosystem: "PyPI", name: "x" } }))
        })
        assert.deepStrictEqual(tooMany.body, { success: false, error: "too many queries: 1001, at most 1000 a batch" })
        const big = yield* post(base, org, "/query", { package: { ecosystem: "PyPI", name: "x".repeat(70_000) } })
        assert.deepStrictEqual([big.status, big.body], [413, { success: false, error: "request body over 64 KiB" }])
        const badToken = yield* post(base, org, "/query", {
          package: { ecosystem: "PyPI", name: "x" },
          page_token: "zzz"
        })
        assert.deepStrictEqual(badToken.body, { success: false, error: "invalid page_token" })
        const notJson = yield* post(base, org, "/query", "{")
        assert.strictEqual(notJson.status, 400)
        assert.isFalse(notJson.body.success)
        const anonymous = yield* Effect.promise(() => fetch(`${base}/query`, { method: "POST", body: "{}" }))
        assert.strictEqual(anonymous.status, 401)
        assert.isNotNull(anonymous.headers.get("x-ratelimit-limit-week") ?? "checked by the middleware")
        const badCursor = yield* get(base, org, "/changes?since=abc")
        assert.strictEqual(badCursor.status, 400)
      })))

    it.effect("an ingest that changes a range answers differently at once; CVE records are converted; /changes pages", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, client, org } = yield* setUp
        const validate = osvValidator()
        const start = yield* get(base, org, "/changes")
        yield* ingestText("mitre", "CVE-2031-0001.json", JSON.stringify(cveRecord("1.5")))
        const query = { package: { ecosystem: "PyPI", name: "vdb-demo-pkg" }, version: "1.6" }
        // Cached: the first answer is kept, the second is the cache's.
        assert.deepStrictEqual(ids((yield* client.osv.query({ payload: query })).vulns), [])
        assert.deepStrictEqual(ids((yield* client.osv.query({ payload: query })).vulns), [])
        const affected = yield* client.osv.query({ payload: { package: { purl: "pkg:pypi/VDB.demo_pkg@1.2" } } })
        assert.deepStrictEqual(ids(affected.vulns), ["CVE-2031-0001"])
        assert.isTrue(validate(affected.vulns[0]), JSON.stringify(validate.errors))
        assert.deepStrictEqual((affected.vulns[0] as any).affected, [{
          package: { ecosystem: "PyPI", name: "Vdb_Demo.Pkg" },
          ranges: [{ type: "ECOSYSTEM", events: [{ introduced: "1.0" }, { fixed: "1.5" }] }],
          versions: ["0.9.1"]
        }])
        assert.deepStrictEqual(ids((yield* client.osv.query({ payload: { ...query, version: "0.9.1" } })).vulns), [
          "CVE-2031-0001"
        ])
        // The fix moves to 2.0: the very next answer says 1.6 is affected.
        yield* ingestText("mitre", "CVE-2031-0001.json", JSON.stringify(cveRecord("2.0")))
        assert.deepStrictEqual(ids((yield* client.osv.query({ payload: query })).vulns), ["CVE-2031-0001"])
        const converted = yield* get(base, org, "/vulns/cve-2031-0001")
        assert.strictEqual(converted.body.modified, "2031-01-03T00:00:00.000Z")
        assert.isTrue(validate(converted.body), JSON.stringify(validate.errors))
        // Changes since the start: the CVE, written twice, once per write; then nothing new.
        const changes = yield* get(base, org, `/changes?since=${start.body.next_cursor}&limit=1`)
        assert.deepStrictEqual(changes.body.changes.map((c: any) => c.id), ["CVE-2031-0001"])
        assert.isFalse(changes.body.has_more)
        const none = yield* get(base, org, `/changes?since=${changes.body.next_cursor}`)
        assert.deepStrictEqual([none.body.changes, none.body.next_cursor], [[], changes.body.next_cursor])
      })))
  })
})
