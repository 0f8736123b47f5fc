import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Organizations } from "../../../src/orgs/Organizations.ts"
import { VulnStore } from "../../../src/vulns/VulnStore.ts"
import { PostgresTest } from "../../support/database.ts"
import { SecretBoxTest } from "../../support/secrets.ts"
import { serveWithOrg } from "../harness.ts"
import { get, type RawResponse } from "./http.ts"
import { ingestRecord } from "./seed.ts"
import { forgeToken } from "./tokens.ts"

/**
 * `VulnFastPath` answers a cached `/vuln` for an active organization its limits admit before the
 * router; a query string (ignored by the endpoint) sends the same request through the HttpApi. Both must answer the
 * same bytes and headers, and every other case must reach the HttpApi's own answer.
 */
const Deps = Layer.mergeAll(Organizations.layer, VulnStore.layer).pipe(
  Layer.provideMerge(Layer.mergeAll(PostgresTest, SecretBoxTest))
)

const comparable = (r: RawResponse) => {
  const { date: _date, ...headers } = r.headers
  return { status: r.status, headers, body: r.body.toString("base64") }
}

/**
 * A limited organization's requests for identity, gzip and 304, each on the fast path, then through the
 * HttpApi (a query string): the same answers apart from the remaining count, which falls by one a request
 * whichever path answers. `remaining` is the count the first response showed; returns the count after.
 */
const countedOnBothPaths = (url: string, auth: Record<string, string>, etag: string, remaining: number) =>
  Effect.gen(function*() {
    // The seconds until a window resets are read from the clock per request: the two answers may
    // fall either side of a second's boundary, so those agree within one second instead.
    const RESETS = ["ratelimit-reset", "x-ratelimit-reset-minute", "x-ratelimit-reset-week"]
    const same = (r: RawResponse) => {
      const { "ratelimit-remaining": _a, "x-ratelimit-remaining-week": _b, ...rest } = comparable(r).headers
      for (const name of RESETS) delete rest[name]
      return { ...comparable(r), headers: rest }
    }
    const resetsAgree = (fast: RawResponse, full: RawResponse) => {
      for (const name of RESETS) {
        assert.strictEqual(fast.headers[name] === undefined, full.headers[name] === undefined, name)
        if (fast.headers[name] !== undefined) {
          assert.isAtMost(Math.abs(Number(fast.headers[name]) - Number(full.headers[name])), 1, name)
        }
      }
    }
    const variants: ReadonlyArray<Record<string, string>> = [{}, { "accept-encoding": "gzip" }, {
      "if-none-match": etag
    }]
    for (const headers of variants) {
      const fast = yield* get(url, { ...auth, ...headers })
      const full = yield* get(`${url}?via=httpapi`, { ...auth, ...headers })
      assert.strictEqual(fast.headers["x-ratelimit-remaining-week"], String(--remaining))
      assert.strictEqual(full.headers["x-ratelimit-remaining-week"], String(--remaining))
      assert.deepStrictEqual(same(fast), same(full), JSON.stringify(headers))
      resetsAgree(fast, full)
    }
    return remaining
  })

layer(Deps, { excludeTestServices: true, timeout: 60_000 })((it) => {
  describe("the cached /vuln fast path", () => {
    it.effect("answers exactly what the HttpApi answers: identity, gzip, br, 304; and logs the request the same way", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, org } = yield* serveWithOrg("fast", { perMinute: 0, perWeek: 0 })
        yield* ingestRecord({ source: "mitre", identifier: "CVE-2034-0001", size: 3000 })
        const auth = { authorization: org.apiKey }
        const first = yield* get(`${base}/vuln/CVE-2034-0001`, auth)
        const etag = first.headers.etag as string
        const variants: ReadonlyArray<Record<string, string>> = [{}, { "accept-encoding": "gzip" }, {
          "accept-encoding": "br;q=1, gzip;q=0.5"
        }, { "if-none-match": etag }]
        for (const headers of variants) {
          const fast = yield* get(`${base}/vuln/CVE-2034-0001`, { ...auth, ...headers })
          const full = yield* get(`${base}/vuln/CVE-2034-0001?via=httpapi`, { ...auth, ...headers })
          assert.deepStrictEqual(comparable(fast), comparable(full), JSON.stringify(headers))
          // Again: now from the fast path's finished responses.
          const again = yield* get(`${base}/vuln/CVE-2034-0001`, { ...auth, ...headers })
          assert.deepStrictEqual(comparable(again), comparable(full), JSON.stringify(headers))
        }

        const sql = yield* SqlClient.SqlClient
        let rows: ReadonlyArray<{ route: string; identifier: string; status: number }> = []
        // The usage log writes off the response path: poll for the batch.
        for (let i = 0; i < 100 && rows.length < 13; i++) {
          yield* Effect.sleep("50 millis")
          rows = yield* sql<{ route: string; identifier: string; status: number }>`
            SELECT route, identifier, status FROM usage_log WHERE org_uuid = ${org.uuid}::uuid ORDER BY id`
        }
        assert.strictEqual(rows.length, 13)
        for (const row of rows) {
          assert.strictEqual(row.route, "/v1/vuln/:identifier")
          assert.strictEqual(row.identifier, "CVE-2034-0001")
        }
        assert.deepStrictEqual(rows.map((r) => r.status).slice(-3), [304, 304, 304])
      })))

    it.effect("a limited organization: counted on the fast path, answered as the HttpApi answers; a refusal is the HttpApi's 429", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, orgs, org } = yield* serveWithOrg("fast-limited", { perMinute: 0, perWeek: 1000 })
        yield* ingestRecord({ source: "mitre", identifier: "CVE-2034-0003", size: 3000 })
        const auth = { authorization: org.apiKey }
        const first = yield* get(`${base}/vuln/CVE-2034-0003`, auth)
        assert.strictEqual(first.headers["x-ratelimit-remaining-week"], "999")
        const remaining = yield* countedOnBothPaths(
          `${base}/vuln/CVE-2034-0003`,
          auth,
          first.headers.etag as string,
          999
        )

        // At the limit: the fast path's refusal goes to the HttpApi, whose 429 is the API's; nothing more is counted.
        yield* orgs.setLimits(org.uuid, { perMinute: 0, perWeek: 1000 - remaining })
        const over = yield* get(`${base}/vuln/CVE-2034-0003`, auth)
        assert.strictEqual(over.status, 429)
        assert.deepStrictEqual(JSON.parse(over.body.toString()), { success: false, error: "rate limit exceeded" })
        assert.strictEqual(over.headers["x-ratelimit-remaining-week"], "0")
        assert.isDefined(over.headers["retry-after"])
        yield* orgs.setLimits(org.uuid, { perMinute: 0, perWeek: 1000 })
        assert.strictEqual(
          (yield* get(`${base}/vuln/CVE-2034-0003`, auth)).headers["x-ratelimit-remaining-week"],
          String(remaining - 1)
        )
      })))

    it.effect("Bearer tokens: the same answers as the HttpApi's; an expired, tampered or deactivated one gets the HttpApi's refusal", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, orgs, org } = yield* serveWithOrg("fast-bearer", { perMinute: 0, perWeek: 500 })
        const forge = (exp: number) => forgeToken(org, exp)
        yield* ingestRecord({ source: "mitre", identifier: "CVE-2034-0004", size: 3000 })
        const auth = { authorization: `Bearer ${yield* forge(Math.floor(Date.now() / 1000) + 900)}` }
        const first = yield* get(`${base}/vuln/CVE-2034-0004`, auth)
        assert.strictEqual(first.status, 200)
        assert.strictEqual(first.headers["x-ratelimit-remaining-week"], "499")
        yield* countedOnBothPaths(`${base}/vuln/CVE-2034-0004`, auth, first.headers.etag as string, 499)

        // Expiring at the next whole second: answered from memory until then, the HttpApi's 403 after.
        const shortLived = { authorization: `Bearer ${yield* forge(Math.floor(Date.now() / 1000) + 2)}` }
        assert.strictEqual((yield* get(`${base}/vuln/CVE-2034-0004`, shortLived)).status, 200)
        yield* Effect.sleep("2100 millis")
        const expired = yield* get(`${base}/vuln/CVE-2034-0004`, shortLived)
        assert.strictEqual(expired.status, 403)
        assert.deepStrictEqual(JSON.parse(expired.body.toString()), { success: false, error: "token expired" })
        const tampered = auth.authorization.slice(0, -2) + (auth.authorization.at(-2) === "A" ? "B" : "A") +
          auth.authorization.at(-1)
        const refused = yield* get(`${base}/vuln/CVE-2034-0004`, { authorization: tampered })
        assert.strictEqual(refused.status, 401)
        assert.strictEqual(refused.headers["www-authenticate"], `ApiKey realm="vdb", Bearer realm="vdb"`)
        yield* orgs.setActive(org.uuid, false)
        assert.strictEqual((yield* get(`${base}/vuln/CVE-2034-0004`, auth)).status, 403)
        yield* orgs.setActive(org.uuid, true)
        assert.strictEqual((yield* get(`${base}/vuln/CVE-2034-0004`, auth)).status, 200)
      })))

    it.effect("a wrong key, an inactive organization and a miss get the HttpApi's answers; limits set later apply at once", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, orgs, org } = yield* serveWithOrg("fast", { perMinute: 0, perWeek: 0 })
        yield* ingestRecord({ source: "mitre", identifier: "CVE-2034-0002" })
        const url = `${base}/vuln/CVE-2034-0002`
        assert.strictEqual((yield* get(url, { authorization: org.apiKey })).status, 200)
        assert.strictEqual((yield* get(url, { authorization: org.apiKey })).status, 200)

        const wrong = org.apiKey.slice(0, -1) + (org.apiKey.endsWith("0") ? "1" : "0")
        const refused = yield* get(url, { authorization: wrong })
        assert.strictEqual(refused.status, 401)
        assert.strictEqual(refused.headers["www-authenticate"], `ApiKey realm="vdb", Bearer realm="vdb"`)

        yield* orgs.setLimits(org.uuid, { perMinute: 0, perWeek: 100 })
        const limited = yield* get(url, { authorization: org.apiKey })
        assert.strictEqual(limited.status, 200)
        assert.strictEqual(limited.headers["x-ratelimit-remaining-week"], "99")

        yield* orgs.setActive(org.uuid, false)
        assert.strictEqual((yield* get(url, { authorization: org.apiKey })).status, 403)
        yield* orgs.setActive(org.uuid, true)
        yield* orgs.setLimits(org.uuid, { perMinute: 0, perWeek: 0 })
        assert.strictEqual((yield* get(url, { authorization: org.apiKey })).status, 200)

        // Not cached (never found): the HttpApi's 404, in the API's dialect.
        const missing = yield* get(`${base}/vuln/CVE-2034-9999`, { authorization: org.apiKey })
        assert.strictEqual(missing.status, 404)
        assert.strictEqual(JSON.parse(missing.body.toString()).success, false)
        // The cache follows an ingest on the fast path too.
        yield* ingestRecord({ source: "mitre", identifier: "CVE-2034-0002", revision: 2 })
        assert.include((yield* get(url, { authorization: org.apiKey })).body.toString(), "revision 2")
      })))
  })
})
