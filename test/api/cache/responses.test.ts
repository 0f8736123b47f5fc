import { assert, describe, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { brotliDecompressSync, gunzipSync } from "node:zlib"
import { Organizations } from "../../../src/orgs/Organizations.ts"
import type { SecretBox } from "../../../src/secrets/SecretBox.ts"
import { VulnStore } from "../../../src/vulns/VulnStore.ts"
import { PostgresTest } from "../../support/database.ts"
import { SecretBoxTest } from "../../support/secrets.ts"
import { serveApi } from "../harness.ts"
import { get, json } from "./http.ts"
import { ingestRecord } from "./seed.ts"

/**
 * The response cache, ETags and compression over real HTTP, on the real SQL
 * store: every ingest here goes through `putRaw`/`putNormalised`, the path
 * that publishes the invalidation.
 */
const Deps = Layer.mergeAll(Organizations.layer, VulnStore.layer).pipe(
  Layer.provideMerge(Layer.mergeAll(PostgresTest, SecretBoxTest))
)
type DepsOf = Organizations | VulnStore | SqlClient.SqlClient | SecretBox

const startServer = (config: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const ctx = yield* Effect.context<DepsOf>()
    return yield* serveApi(Layer.succeedContext(ctx))
  }).pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(config))))

const newKey = (limits: { perMinute: number; perWeek: number } = { perMinute: 0, perWeek: 0 }) =>
  Effect.map(Effect.flatMap(Organizations, (orgs) => orgs.create({ name: "cache", ...limits })), (org) => org.apiKey)

layer(Deps, { excludeTestServices: true, timeout: 60_000 })((it) => {
  describe("response cache", () => {
    it.effect("/info cache_hit is true only when served from the cache; an ingest of the CVE makes the next a build", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer()
        const auth = { authorization: yield* newKey() }
        yield* ingestRecord({ source: "mitre", identifier: "CVE-2031-0001" })
        const first = json(yield* get(`${base}/info/CVE-2031-0001`, auth))
        assert.isFalse(first.cache_hit)
        assert.deepStrictEqual(first.sources, [{ name: "mitre", processing: false }])
        const second = json(yield* get(`${base}/info/2031-0001`, auth))
        assert.isTrue(second.cache_hit)
        assert.deepStrictEqual({ ...second, _timestamp: 0, cache_hit: false }, { ...first, _timestamp: 0 })
        yield* ingestRecord({ source: "nist-nvd", identifier: "CVE-2031-0001" })
        const third = json(yield* get(`${base}/info/CVE-2031-0001`, auth))
        assert.isFalse(third.cache_hit)
        assert.deepStrictEqual(third.sources.map((s: { name: string }) => s.name).sort(), ["mitre", "nist-nvd"])
        assert.isTrue(json(yield* get(`${base}/info/CVE-2031-0001`, auth)).cache_hit)
      })))

    it.effect("VDB_RESPONSE_CACHE_BYTES=0 turns the cache off: cache_hit stays false, ETags still work", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer({ VDB_RESPONSE_CACHE_BYTES: "0" })
        const auth = { authorization: yield* newKey() }
        yield* ingestRecord({ source: "mitre", identifier: "CVE-2031-0002" })
        const first = yield* get(`${base}/info/CVE-2031-0002`, auth)
        assert.isFalse(json(first).cache_hit)
        assert.isFalse(json(yield* get(`${base}/info/CVE-2031-0002`, auth)).cache_hit)
        const etag = first.headers.etag as string
        assert.strictEqual((yield* get(`${base}/info/CVE-2031-0002`, { ...auth, "if-none-match": etag })).status, 304)
      })))

    it.effect("an ingest of an ALIAS evicts the CVE's entries; dropping the alias again evicts them too", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer()
        const auth = { authorization: yield* newKey() }
        yield* ingestRecord({ source: "mitre", identifier: "CVE-2031-0003" })
        const before = yield* get(`${base}/vuln/CVE-2031-0003`, auth)
        assert.strictEqual(json(before).length, 1)
        const cached = yield* get(`${base}/vuln/CVE-2031-0003`, auth)
        assert.strictEqual(cached.headers.etag, before.headers.etag)
        assert.isTrue(json(yield* get(`${base}/info/CVE-2031-0003`, auth)).cache_hit === false)
        assert.isTrue(json(yield* get(`${base}/info/CVE-2031-0003`, auth)).cache_hit)

        // The GHSA advisory names the CVE as its alias: only the alias is ingested.
        yield* ingestRecord({ source: "ghsa", identifier: "GHSA-c2fh-m3pq-7r8v", aliases: ["CVE-2031-0003"] })
        const after = yield* get(`${base}/vuln/CVE-2031-0003`, auth)
        assert.deepStrictEqual(json(after).map((r: any) => r.cveMetadata.cveId).sort(), [
          "CVE-2031-0003",
          "GHSA-c2fh-m3pq-7r8v"
        ])
        assert.notStrictEqual(after.headers.etag, before.headers.etag)
        const info = json(yield* get(`${base}/info/CVE-2031-0003`, auth))
        assert.isFalse(info.cache_hit)
        assert.deepStrictEqual(info.aliases, ["GHSA-c2fh-m3pq-7r8v"])

        // A new revision of the advisory that no longer names the CVE: the alias rows go, and so does the entry.
        yield* ingestRecord({ source: "ghsa", identifier: "GHSA-c2fh-m3pq-7r8v", revision: 2 })
        assert.strictEqual(json(yield* get(`${base}/vuln/CVE-2031-0003`, auth)).length, 1)
        assert.deepStrictEqual(json(yield* get(`${base}/info/CVE-2031-0003`, auth)).aliases, [])
      })))

    it.effect("/exploits answers are cached per query and evicted by an ingest of the CVE", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer()
        const auth = { authorization: yield* newKey() }
        yield* ingestRecord({ source: "mitre", identifier: "CVE-2031-0004" })
        const first = yield* get(`${base}/exploits/CVE-2031-0004?limit=5`, auth)
        assert.strictEqual(first.status, 200)
        assert.strictEqual(json(first).count, 0)
        assert.isNumber(json(first).timestamp)
        const again = yield* get(`${base}/exploits/CVE-2031-0004?limit=5`, auth)
        assert.strictEqual(again.headers.etag, first.headers.etag)
        assert.strictEqual(
          (yield* get(`${base}/exploits/CVE-2031-0004?limit=5`, {
            ...auth,
            "if-none-match": first.headers.etag as string
          })).status,
          304
        )
        const store = yield* VulnStore
        yield* store.putNormalised([{
          source: "exploit-db",
          identifier: "edb-1",
          hash: "h1",
          fresh: true,
          outputs: [{
            kind: "exploits",
            summaryKey: "exploitDb",
            exploits: [{
              uuid: "u-2031-4",
              cveId: "CVE-2031-0004",
              source: "exploit-db",
              type: "exploit",
              details: { exploitDb: { id: "1" } }
            }]
          }]
        }], [])
        const after = yield* get(`${base}/exploits/CVE-2031-0004?limit=5`, {
          ...auth,
          "if-none-match": first.headers.etag as string
        })
        assert.strictEqual(after.status, 200)
        assert.strictEqual(json(after).count, 1)
        assert.notStrictEqual(after.headers.etag, first.headers.etag)
        assert.strictEqual(
          (yield* get(`${base}/exploits/CVE-2031-0004?limit=5`, auth)).headers.etag,
          after.headers.etag
        )

        // The same item re-normalised now files its exploit under another CVE: what it filed
        // before is touched too, though nothing in the new output names CVE-2031-0004.
        yield* store.putNormalised([{
          source: "exploit-db",
          identifier: "edb-1",
          hash: "h2",
          outputs: [{
            kind: "exploits",
            summaryKey: "exploitDb",
            exploits: [{
              uuid: "u-2031-4",
              cveId: "CVE-2031-0005",
              source: "exploit-db",
              type: "exploit",
              details: { exploitDb: { id: "1" } }
            }]
          }]
        }], [])
        assert.strictEqual(json(yield* get(`${base}/exploits/CVE-2031-0004?limit=5`, auth)).count, 0)
      })))
  })

  describe("ETag and If-None-Match", () => {
    it.effect("match, mismatch, lists, weak comparison, *; the tag changes with the stored record", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer()
        const auth = { authorization: yield* newKey() }
        yield* ingestRecord({ source: "mitre", identifier: "CVE-2031-0010", size: 3000 })
        const url = `${base}/vuln/CVE-2031-0010`
        const full = yield* get(url, auth)
        const etag = full.headers.etag as string
        assert.match(etag, /^W\/"[A-Za-z0-9_-]+"$/)
        const conditional = (value: string) => get(url, { ...auth, "if-none-match": value })

        const matched = yield* conditional(etag)
        assert.strictEqual(matched.status, 304)
        assert.strictEqual(matched.body.length, 0)
        assert.strictEqual(matched.headers.etag, etag)
        assert.strictEqual(matched.headers.vary, "accept-encoding")
        assert.strictEqual((yield* conditional(`W/"not-it"`)).status, 200)
        assert.strictEqual((yield* conditional(`"a", W/"b", ${etag}`)).status, 304)
        assert.strictEqual((yield* conditional(`"a", W/"b"`)).status, 200)
        // Weak comparison: the same opaque tag without `W/` matches too.
        assert.strictEqual((yield* conditional(etag.slice(2))).status, 304)
        assert.strictEqual((yield* conditional("*")).status, 304)
        assert.strictEqual((yield* conditional(`${etag.slice(0, -2)}x"`)).status, 200)

        yield* ingestRecord({ source: "mitre", identifier: "CVE-2031-0010", size: 3000, revision: 2 })
        const changed = yield* conditional(etag)
        assert.strictEqual(changed.status, 200)
        assert.notStrictEqual(changed.headers.etag, etag)
        assert.include(changed.body.toString(), "revision 2")
        assert.strictEqual((yield* conditional(changed.headers.etag as string)).status, 304)

        const info = yield* get(`${base}/info/CVE-2031-0010`, auth)
        const infoMatched = yield* get(`${base}/info/CVE-2031-0010`, {
          ...auth,
          "if-none-match": info.headers.etag as string
        })
        assert.strictEqual(infoMatched.status, 304)
        assert.strictEqual(infoMatched.headers.etag, info.headers.etag)
      })))

    it.effect("a 304 still counts against the rate limits and is in the usage log", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer()
        const apiKey = yield* newKey({ perMinute: 0, perWeek: 1000 })
        yield* ingestRecord({ source: "mitre", identifier: "CVE-2031-0011" })
        const first = yield* get(`${base}/vuln/CVE-2031-0011`, { authorization: apiKey })
        assert.strictEqual(first.headers["x-ratelimit-remaining-week"], "999")
        const notModified = yield* get(`${base}/vuln/CVE-2031-0011`, {
          authorization: apiKey,
          "if-none-match": first.headers.etag as string
        })
        assert.strictEqual(notModified.status, 304)
        assert.strictEqual(notModified.headers["x-ratelimit-remaining-week"], "998")
        const sql = yield* SqlClient.SqlClient
        const orgUuid = apiKey.slice("ApiKey ".length).split(":")[0]!
        let statuses: ReadonlyArray<number> = []
        // The usage log writes off the response path: poll for the batch.
        for (let i = 0; i < 100 && statuses.length < 2; i++) {
          yield* Effect.sleep("50 millis")
          statuses =
            (yield* sql<{ status: number }>`SELECT status FROM usage_log WHERE org_uuid = ${orgUuid}::uuid ORDER BY id`)
              .map((r) => r.status)
        }
        assert.deepStrictEqual(statuses, [200, 304])
      })))
  })

  describe("OpenAPI", () => {
    it.effect("documents If-None-Match, the 304 and the ETag/Vary/Content-Encoding headers (those on /query too)", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer()
        const doc = json(yield* get(`${base}/openapi.json`, {}))
        for (const path of ["/v1/info/{identifier}", "/v1/vuln/{identifier}", "/v1/exploits/{identifier}"]) {
          const operation = doc.paths[path].get
          assert.isDefined(operation.responses["304"], path)
          assert.isDefined(operation.responses["200"].headers.ETag, path)
          assert.include(operation.parameters.map((p: { name: string }) => p.name), "If-None-Match")
        }
        const vuln = doc.paths["/v1/vuln/{identifier}"].get
        assert.deepStrictEqual(Object.keys(vuln.responses["200"].headers).sort(), ["Content-Encoding", "ETag", "Vary"])
        // A package query: the same answer headers; a POST is never answered 304.
        const query = doc.paths["/v1/query"].post
        assert.deepStrictEqual(Object.keys(query.responses["200"].headers).sort(), ["Content-Encoding", "ETag", "Vary"])
        assert.isUndefined(query.responses["304"])
        assert.notInclude((query.parameters ?? []).map((p: { name: string }) => p.name), "If-None-Match")
      })))
  })

  describe("Accept-Encoding on /vuln", () => {
    it.effect("gzip, br, q-values, q=0, identity; small bodies are sent as they are", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer()
        const auth = { authorization: yield* newKey() }
        yield* ingestRecord({ source: "mitre", identifier: "CVE-2031-0020", size: 4000 })
        yield* ingestRecord({ source: "mitre", identifier: "CVE-2031-0021", size: 10 })
        const url = `${base}/vuln/CVE-2031-0020`
        const as = (acceptEncoding: string | undefined) =>
          get(url, acceptEncoding === undefined ? auth : { ...auth, "accept-encoding": acceptEncoding })

        const identity = yield* as(undefined)
        assert.isUndefined(identity.headers["content-encoding"])
        assert.strictEqual(identity.headers.vary, "accept-encoding")
        assert.isAbove(identity.body.length, 4000)

        const gzip = yield* as("gzip")
        assert.strictEqual(gzip.headers["content-encoding"], "gzip")
        assert.strictEqual(gzip.headers.vary, "accept-encoding")
        assert.strictEqual(gzip.headers.etag, identity.headers.etag)
        assert.isBelow(gzip.body.length, identity.body.length)
        assert.deepStrictEqual(gunzipSync(gzip.body), identity.body)
        // Served again from the cached variant: the same bytes.
        assert.deepStrictEqual((yield* as("gzip")).body, gzip.body)

        const br = yield* as("br")
        assert.strictEqual(br.headers["content-encoding"], "br")
        assert.deepStrictEqual(brotliDecompressSync(br.body), identity.body)

        assert.strictEqual((yield* as("gzip, deflate, br")).headers["content-encoding"], "br")
        assert.strictEqual((yield* as("gzip;q=1, br;q=0.5")).headers["content-encoding"], "gzip")
        assert.strictEqual((yield* as("br;q=0.9, gzip;q=0.8")).headers["content-encoding"], "br")
        assert.strictEqual((yield* as("br;q=0, gzip")).headers["content-encoding"], "gzip")
        const refused = yield* as("gzip;q=0, br;q=0")
        assert.isUndefined(refused.headers["content-encoding"])
        assert.deepStrictEqual(refused.body, identity.body)
        assert.isUndefined((yield* as("identity")).headers["content-encoding"])
        assert.strictEqual((yield* as("*")).headers["content-encoding"], "br")

        const small = yield* get(`${base}/vuln/CVE-2031-0021`, { ...auth, "accept-encoding": "gzip, br" })
        assert.strictEqual(small.status, 200)
        assert.isBelow(small.body.length, 1024)
        assert.isUndefined(small.headers["content-encoding"])
        assert.strictEqual(json(small)[0].cveMetadata.cveId, "CVE-2031-0021")
      })))
  })
})
