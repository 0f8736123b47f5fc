import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { type IncomingHttpHeaders, request } from "node:http"
import { formatApiKey } from "../../src/auth/ApiKey.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { UsageLog } from "../../src/usage/UsageLog.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { PostgresTest } from "../support/database.ts"
import { SecretBoxTest } from "../support/secrets.ts"
import { get } from "./cache/http.ts"
import { ingestRecord } from "./cache/seed.ts"
import { forgeToken } from "./cache/tokens.ts"
import { serveWithOrg } from "./harness.ts"

/**
 * Requests no route takes (404, 405, 414, dot segments, malformed paths) are in the usage log like
 * every other API request (spec 1: logged for the security audit): once each, under the fixed
 * route `unmatched`, with the organization whose valid credentials they carry, else null.
 */
const Deps = Layer.mergeAll(Organizations.layer, VulnStore.layer).pipe(
  Layer.provideMerge(Layer.mergeAll(PostgresTest, SecretBoxTest))
)

/** Any method, with the path sent exactly as written (`fetch` and `get` resolve `%2e%2e` first). */
const send = (root: string, method: string, path: string, headers: Record<string, string>) =>
  Effect.promise(() =>
    new Promise<{ readonly status: number; readonly headers: IncomingHttpHeaders }>((resolve, reject) => {
      const { hostname, port } = new URL(root)
      const req = request({ host: hostname, port, method, path, headers, agent: false }, (res) => {
        res.resume()
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers }))
      })
      req.on("error", reject)
      req.end()
    })
  )

interface Row {
  readonly org_uuid: string | null
  readonly method: string
  readonly route: string
  readonly identifier: string | null
  readonly status: number
}

/** The entries of the requests sent with this user agent, once `count` of them are written (the log writes off the response path). */
const entriesOf = (userAgent: string, count: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    let rows: ReadonlyArray<Row> = []
    for (let i = 0; i < 100 && rows.length < count; i++) {
      yield* Effect.sleep("50 millis")
      rows = yield* sql<Row>`SELECT org_uuid::text AS org_uuid, method, route, identifier, status FROM usage_log
        WHERE user_agent = ${userAgent} ORDER BY id`
    }
    // A little longer: nothing may be logged twice.
    yield* Effect.sleep("200 millis")
    return yield* sql<Row>`SELECT org_uuid::text AS org_uuid, method, route, identifier, status FROM usage_log
      WHERE user_agent = ${userAgent} ORDER BY id`
  })

const LONG = "A".repeat(3000)

layer(Deps, { excludeTestServices: true, timeout: 60_000 })((it) => {
  describe("usage log of requests no route takes", () => {
    it.effect("404, 405, 414 and dot segments are logged once, with the organization of valid credentials and null otherwise; not counted", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, org } = yield* serveWithOrg("unmatched", { perMinute: 5, perWeek: 100 })
        const root = base.replace(/\/v1$/, "")
        const bearer = `Bearer ${yield* forgeToken(org, Math.floor(Date.now() / 1000) + 900)}`
        const wrongKey = formatApiKey(org.uuid, "f".repeat(64))
        const unknownOrg = formatApiKey(randomUUID(), "f".repeat(64))
        const requests: ReadonlyArray<readonly [method: string, path: string, status: number, identifier: string]> = [
          ["GET", "/v1/nope", 404, "/v1/nope"],
          ["DELETE", "/v1/vuln/CVE-2021-44228", 405, "/v1/vuln/CVE-2021-44228"],
          ["GET", `/v1/vuln/X-${LONG}`, 414, `/v1/vuln/X-${LONG}`.slice(0, 200)],
          ["GET", "/v1/vuln/CVE-2021-44228/x?token=SECRET", 404, "/v1/vuln/CVE-2021-44228/x"],
          ["GET", "/v1/vuln/%2e%2e", 404, "/v1/vuln/%2e%2e"],
          ["POST", "/v1/openapi.json", 405, "/v1/openapi.json"]
        ]
        const credentials: ReadonlyArray<readonly [Record<string, string>, string | null]> = [
          [{ authorization: org.apiKey }, org.uuid],
          [{ authorization: bearer }, org.uuid],
          [{}, null],
          [{ authorization: wrongKey }, null],
          [{ authorization: unknownOrg }, null],
          [{ authorization: "Bearer not-a-token" }, null]
        ]
        const userAgent = `usage-test-${randomUUID()}`
        const expected: Array<Row> = []
        for (const [headers, orgUuid] of credentials) {
          for (const [method, path, status, identifier] of requests) {
            const answer = yield* send(root, method, path, { ...headers, "user-agent": userAgent })
            assert.strictEqual(answer.status, status, `${method} ${path}`)
            // Not counted against the limits, so no rate-limit headers.
            assert.isUndefined(answer.headers["x-ratelimit-limit-minute"], `${method} ${path}`)
            expected.push({ org_uuid: orgUuid, method, route: "unmatched", identifier, status })
          }
        }
        assert.deepStrictEqual(yield* entriesOf(userAgent, expected.length), expected)

        // None of them was counted: the organization's first data request still has all 5 of its minute.
        const data = yield* get(`${base}/info/CVE-2021-44228`, { authorization: org.apiKey })
        assert.strictEqual(data.headers["x-ratelimit-remaining-minute"], "4")

        // `vdb usage` reports them in one row per organization under the fixed route.
        const summary = yield* Effect.flatMap(UsageLog, (usage) => usage.summary({ orgUuid: org.uuid })).pipe(
          Effect.provide(UsageLog.layer)
        )
        const unmatched = summary.rows.filter((row) => row.route === "unmatched")
        assert.deepStrictEqual(unmatched.map((row) => [row.orgUuid, row.requests, row.errors]), [[org.uuid, 12, 12]])
      })))

    it.effect("a path the routes read literally (';', a malformed percent-encoding) is logged once, by its endpoint", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, org } = yield* serveWithOrg("literal", { perMinute: 0, perWeek: 0 })
        const userAgent = `usage-test-${randomUUID()}`
        const headers = { authorization: org.apiKey, "user-agent": userAgent }
        assert.strictEqual((yield* get(`${base}/vuln/CVE-2021-44228;DROP`, headers)).status, 400)
        assert.strictEqual((yield* get(`${base}/exploits/%zz`, headers)).status, 400)
        assert.deepStrictEqual(yield* entriesOf(userAgent, 2), [
          {
            org_uuid: org.uuid,
            method: "GET",
            route: "/v1/vuln/:identifier",
            identifier: "CVE-2021-44228;DROP",
            status: 400
          },
          { org_uuid: org.uuid, method: "GET", route: "/v1/exploits/:identifier", identifier: "%zz", status: 400 }
        ])
      })))

    it.effect("an unmatched request with odd text in the same batch never costs another organization's entries", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base, orgs, org } = yield* serveWithOrg("good", { perMinute: 0, perWeek: 0 })
        const other = yield* orgs.create({ name: "prober", perMinute: 0, perWeek: 0 })
        yield* ingestRecord({ source: "mitre", identifier: "CVE-2035-0003" })
        const root = base.replace(/\/v1$/, "")
        const userAgent = `usage-test-${randomUUID()}`
        const good = { authorization: org.apiKey, "user-agent": userAgent }
        const odd = { authorization: other.apiKey, "user-agent": userAgent }
        // Concurrent, so they share a batch of the usage log.
        const answers = yield* Effect.all([
          get(`${base}/vuln/CVE-2035-0003`, good),
          get(`${root}/v1/nope%00%ff%ED%A0%80`, odd),
          get(`${root}/v1/${"\u00ff".repeat(300)}`, odd),
          get(`${root}/v1/vuln/${LONG}`, odd),
          get(`${base}/info/CVE-2035-0003`, good)
        ], { concurrency: "unbounded" })
        assert.deepStrictEqual(answers.map((a) => a.status), [200, 404, 404, 414, 200])
        const rows = yield* entriesOf(userAgent, 5)
        assert.deepStrictEqual(
          rows.map((r) => [r.org_uuid, r.route, r.status]).sort(),
          [
            [org.uuid, "/v1/info/:identifier", 200],
            [org.uuid, "/v1/vuln/:identifier", 200],
            [other.uuid, "unmatched", 404],
            [other.uuid, "unmatched", 404],
            [other.uuid, "unmatched", 414]
          ].sort()
        )
        const dropped = yield* Effect.flatMap(UsageLog, (usage) => usage.summary({})).pipe(
          Effect.provide(UsageLog.layer)
        )
        assert.strictEqual(dropped.dropped, 0)
      })))
  })
})
