import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { readFileSync } from "node:fs"
import { brotliDecompressSync, gunzipSync } from "node:zlib"
import { Organizations } from "../../../src/orgs/Organizations.ts"
import { VulnStore } from "../../../src/vulns/VulnStore.ts"
import { PostgresTest } from "../../support/database.ts"
import { SecretBoxTest } from "../../support/secrets.ts"
import { serveWithOrg } from "../harness.ts"
import { ingestText } from "../osvSupport.ts"
import { post, type RawResponse } from "./http.ts"
import { forgeToken } from "./tokens.ts"

/**
 * `QueryFastPath` answers a cached `POST /v1/query` before the router; a query string (which the
 * endpoint ignores) sends the same request through the HttpApi. Both must answer the same status,
 * headers and bytes and log the same usage entry, and every other case must reach the HttpApi's
 * own answer.
 */
const Deps = Layer.mergeAll(Organizations.layer, VulnStore.layer).pipe(
  Layer.provideMerge(Layer.mergeAll(PostgresTest, SecretBoxTest))
)

const JINJA = readFileSync(new URL("../../fixtures/data/sources/osv/PYSEC-2021-66.json", import.meta.url), "utf8")

const comparable = (r: RawResponse) => {
  const { date: _date, ...headers } = r.headers
  return { status: r.status, headers, body: r.body.toString("base64") }
}

const JSON_HEADERS = { "content-type": "application/json" }
const QUERY = JSON.stringify({ package: { ecosystem: "PyPI", name: "jinja2" }, version: "2.0" })

/** The fast path's answer and the HttpApi's (`?via=httpapi`) to the same request, compared. */
const bothPaths = (base: string, headers: Record<string, string>, body: string) =>
  Effect.gen(function*() {
    const fast = yield* post(`${base}/query`, headers, body)
    const full = yield* post(`${base}/query?via=httpapi`, headers, body)
    return { fast, full }
  })

layer(Deps, { excludeTestServices: true, timeout: 120_000 })((it) => {
  // Below the router (`QueryListener`, as `bin/vdb serve` runs it) and in it (`QueryFastPath`).
  for (const path of ["listener", "router"] as const) {
    describe(`the cached /v1/query fast path (${path})`, () => {
      it.effect("answers exactly what the HttpApi answers, for ApiKey and Bearer, and logs the request the same way", () =>
        Effect.scoped(Effect.gen(function*() {
          const lines: Array<string> = []
          const accessLog = { write: (line: string) => void lines.push(line), flush: () => undefined }
          const { base, org } = yield* serveWithOrg(`query-fast-${path}`, { perMinute: 0, perWeek: 0 }, {
            path,
            accessLog
          })
          yield* ingestText("osv", "osv.ndjson", JINJA.replaceAll("\n", ""))
          const token = yield* forgeToken(org, Math.floor(Date.now() / 1000) + 900)
          const credentials = [org.apiKey, `Bearer ${token}`]
          // The first answer builds the cache entry (HttpApi); the same meaning in other spellings is then the same entry.
          const first = yield* post(`${base}/query`, { authorization: org.apiKey, ...JSON_HEADERS }, QUERY)
          assert.strictEqual(first.status, 200)
          assert.deepStrictEqual(JSON.parse(first.body.toString()).vulns.map((v: any) => v.id), ["PYSEC-2021-66"])
          const spellings = [
            QUERY,
            JSON.stringify({ version: "2.0", package: { name: "Jinja2", ecosystem: "pypi" }, page_token: "o0" }),
            JSON.stringify({ package: { purl: "pkg:pypi/jinja2@2.0" } })
          ]
          let requests = 1
          for (const authorization of credentials) {
            for (const body of spellings) {
              for (const type of ["application/json", "application/json; charset=utf-8"]) {
                const headers = { authorization, "content-type": type }
                const { fast, full } = yield* bothPaths(base, headers, body)
                assert.deepStrictEqual(comparable(fast), comparable(full), `${body} ${type}`)
                assert.deepStrictEqual(fast.body, first.body)
                // Again: now from the fast path's finished responses.
                const again = yield* post(`${base}/query`, headers, body)
                assert.deepStrictEqual(comparable(again), comparable(full))
                requests += 3
              }
            }
          }

          // Compressed for a client that accepts it: compressed once (on the HttpApi's path), then the same
          // answer on both paths; `Vary` on every answer that has codings.
          assert.strictEqual(first.headers.vary, "accept-encoding")
          for (const coding of ["gzip", "br", "br;q=0.5, gzip"]) {
            const headers = { authorization: org.apiKey, ...JSON_HEADERS, "accept-encoding": coding }
            const compressed = yield* post(`${base}/query`, headers, QUERY)
            const expected = coding === "br" ? "br" : "gzip"
            assert.strictEqual(compressed.headers["content-encoding"], expected)
            const plain = expected === "br" ? brotliDecompressSync(compressed.body) : gunzipSync(compressed.body)
            assert.deepStrictEqual(plain, first.body)
            const { fast, full } = yield* bothPaths(base, headers, QUERY)
            assert.deepStrictEqual(comparable(fast), comparable(full), coding)
            assert.deepStrictEqual(comparable(fast), comparable(compressed), coding)
            requests += 3
          }

          const sql = yield* SqlClient.SqlClient
          type Row = {
            method: string
            route: string
            identifier: string | null
            status: number
            user_agent: string | null
          }
          let rows: ReadonlyArray<Row> = []
          // The usage log writes off the response path: poll for the batch.
          for (let i = 0; i < 100 && rows.length < requests; i++) {
            yield* Effect.sleep("50 millis")
            rows = yield* sql<Row>`SELECT method, route, identifier, status, user_agent FROM usage_log
            WHERE org_uuid = ${org.uuid}::uuid ORDER BY id`
          }
          assert.strictEqual(rows.length, requests)
          for (const row of rows) {
            assert.deepStrictEqual(row, {
              method: "POST",
              route: "/v1/query",
              identifier: null,
              status: 200,
              user_agent: null
            })
          }
          // Below the router, the cached answers are the listener's, each with its access-log line (the test's
          // router has no access log): two of every three spelling requests (not `?via=httpapi`), and of the
          // codings, the ones already compressed (each coding's first request is the handler's, which compresses).
          const logged = lines.map((line) => JSON.parse(line).annotations)
          assert.strictEqual(logged.length, path === "listener" ? 2 * 2 * 3 * 2 + 4 : 0)
          for (const entry of logged) {
            assert.deepInclude(entry, { service: "api", method: "POST", route: "/v1/query", status: 200 })
          }
        })))

      it.effect("a limited organization: counted on the fast path; a refusal is the HttpApi's 429", () =>
        Effect.scoped(Effect.gen(function*() {
          const { base, orgs, org } = yield* serveWithOrg(
            `query-fast-limited-${path}`,
            { perMinute: 0, perWeek: 1000 },
            { path }
          )
          yield* ingestText("osv", "osv.ndjson", JINJA.replaceAll("\n", ""))
          const headers = { authorization: org.apiKey, ...JSON_HEADERS }
          const first = yield* post(`${base}/query`, headers, QUERY)
          assert.strictEqual(first.headers["x-ratelimit-remaining-week"], "999")
          let remaining = 999
          const RESETS = ["ratelimit-reset", "x-ratelimit-reset-minute", "x-ratelimit-reset-week"]
          const same = (r: RawResponse) => {
            const { "ratelimit-remaining": _a, "x-ratelimit-remaining-week": _b, ...rest } = comparable(r).headers
            for (const name of RESETS) delete rest[name]
            return { ...comparable(r), headers: rest }
          }
          for (let n = 0; n < 3; n++) {
            const { fast, full } = yield* bothPaths(base, headers, QUERY)
            assert.strictEqual(fast.headers["x-ratelimit-remaining-week"], String(--remaining))
            assert.strictEqual(full.headers["x-ratelimit-remaining-week"], String(--remaining))
            assert.deepStrictEqual(same(fast), same(full))
          }
          // At the limit: the fast path's refusal goes to the HttpApi, whose 429 is the API's; nothing more is counted.
          yield* orgs.setLimits(org.uuid, { perMinute: 0, perWeek: 1000 - remaining })
          const over = yield* post(`${base}/query`, headers, QUERY)
          assert.strictEqual(over.status, 429)
          assert.deepStrictEqual(JSON.parse(over.body.toString()), { success: false, error: "rate limit exceeded" })
          assert.strictEqual(over.headers["x-ratelimit-remaining-week"], "0")
          assert.isDefined(over.headers["retry-after"])
          yield* orgs.setLimits(org.uuid, { perMinute: 0, perWeek: 1000 })
          const after = yield* post(`${base}/query`, headers, QUERY)
          assert.strictEqual(after.status, 200)
          assert.strictEqual(after.headers["x-ratelimit-remaining-week"], String(remaining - 1))
        })))

      it.effect("any doubt gets the HttpApi's answer: credentials, bodies, a miss; an ingest changes the answer at once", () =>
        Effect.scoped(Effect.gen(function*() {
          const { base, orgs, org } = yield* serveWithOrg(`query-fast-doubt-${path}`, { perMinute: 0, perWeek: 0 }, {
            path
          })
          yield* ingestText("osv", "osv.ndjson", JINJA.replaceAll("\n", ""))
          const headers = { authorization: org.apiKey, ...JSON_HEADERS }
          assert.strictEqual((yield* post(`${base}/query`, headers, QUERY)).status, 200)

          const wrong = org.apiKey.slice(0, -1) + (org.apiKey.endsWith("0") ? "1" : "0")
          const refused = yield* post(`${base}/query`, { ...headers, authorization: wrong }, QUERY)
          assert.strictEqual(refused.status, 401)
          assert.strictEqual(refused.headers["www-authenticate"], `ApiKey realm="vdb", Bearer realm="vdb"`)
          const missing = yield* post(`${base}/query`, JSON_HEADERS, QUERY)
          assert.strictEqual(missing.status, 401)
          yield* orgs.setActive(org.uuid, false)
          assert.strictEqual((yield* post(`${base}/query`, headers, QUERY)).status, 403)
          yield* orgs.setActive(org.uuid, true)

          // Bodies the fast path does not take: the HttpApi's answers, identical on both paths.
          const bodies = [
            JSON.stringify({ package: { ecosystem: "PyPI", name: "jinja2" }, version: "2.0", commit: "abc" }),
            JSON.stringify({ package: { ecosystem: "Nope", name: "x" }, version: "1" }),
            JSON.stringify({ package: { ecosystem: "PyPI", name: "jinja2" }, version: 2 }),
            JSON.stringify({ package: { ecosystem: "PyPI", name: "jinja2" }, version: "2.0", page_token: "bad" }),
            "{not json",
            JSON.stringify({ package: { ecosystem: "PyPI", name: "jinja2" }, version: "2.0", extra: true })
          ]
          for (const body of bodies) {
            const { fast, full } = yield* bothPaths(base, headers, body)
            assert.deepStrictEqual(comparable(fast), comparable(full), body)
          }
          assert.strictEqual((yield* post(`${base}/query`, headers, bodies[0]!)).status, 400)
          // Another content type: whatever the HttpApi makes of it.
          const text = yield* bothPaths(base, { ...headers, "content-type": "text/plain" }, QUERY)
          assert.deepStrictEqual(comparable(text.fast), comparable(text.full))

          // Not cached yet: built by the handler (then cached), the same answer either way.
          const other = JSON.stringify({ package: { ecosystem: "PyPI", name: "jinja2" }, version: "2.0rc1" })
          const built = yield* post(`${base}/query`, headers, other)
          assert.strictEqual(built.status, 200)
          assert.deepStrictEqual(comparable(yield* post(`${base}/query`, headers, other)), comparable(built))

          // The cache follows an ingest on the fast path too: the record's new summary is in the next answer.
          const changed = JSON.parse(JINJA)
          changed.summary = "revision 2 of the summary"
          changed.modified = "2030-01-01T00:00:00Z"
          yield* ingestText("osv", "osv.ndjson", JSON.stringify(changed))
          assert.include((yield* post(`${base}/query`, headers, QUERY)).body.toString(), "revision 2 of the summary")
        })))
    })
  }
})
