import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { request as httpRequest } from "node:http"
import { Organizations } from "../../src/orgs/Organizations.ts"
import type { SecretBox } from "../../src/secrets/SecretBox.ts"
import type { VulnStore } from "../../src/vulns/VulnStore.ts"
import { PostgresTest } from "../support/database.ts"
import { SecretBoxTest } from "../support/secrets.ts"
import { fixtureStore, record, serveApi } from "./harness.ts"

const store = fixtureStore({
  lookups: { "CVE-2021-44228": { aliases: [], records: [record("mitre", "CVE-2021-44228")] } },
  exploits: {}
})

const Deps = Layer.mergeAll(Organizations.layer, store).pipe(
  Layer.provideMerge(Layer.mergeAll(PostgresTest, SecretBoxTest))
)

interface Answer {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly body: any
}

/** A request with the path sent exactly as written (fetch would resolve `..` segments first). */
const send = (base: string, method: string, path: string, headers: Record<string, string> = {}) =>
  Effect.promise(() =>
    new Promise<Answer>((resolve, reject) => {
      const url = new URL(base)
      const req = httpRequest({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => (text += chunk))
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text === "" ? undefined : JSON.parse(text)
          }))
      })
      req.on("error", reject)
      req.end()
    })
  )

const isErrorBody = (answer: Answer) => {
  assert.match(String(answer.headers["content-type"]), /^application\/json/)
  assert.deepStrictEqual(Object.keys(answer.body).sort(), ["error", "success"])
  assert.strictEqual(answer.body.success, false)
  assert.isString(answer.body.error)
}

const startServer = Effect.gen(function*() {
  const ctx = yield* Effect.context<Organizations | VulnStore | SqlClient.SqlClient | SecretBox>()
  const base = yield* serveApi(Layer.succeedContext(ctx), { memoryCounters: true })
  return base.replace(/\/v1$/, "")
})

const newOrg = Effect.flatMap(Organizations, (orgs) => orgs.create({ name: "acme", perMinute: 0, perWeek: 0 }))

layer(Deps, { excludeTestServices: true, timeout: 60_000 })((it) => {
  describe("API dialect", () => {
    it.effect("unknown routes are 404, wrong methods 405 with Allow, dot segments 404, over-long segments 414: all {success:false,error}", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer
        const { apiKey } = yield* newOrg
        const auth = { authorization: apiKey }

        // A malformed percent-encoding outside an identifier is no route either (inside one, the handler's 400: routing.test.ts).
        // `/` is the pointer to /docs (docs.test.ts).
        for (
          const path of ["/v1/nothing", "/v2/vuln/CVE-2021-44228", "/v1/vuln/CVE-2021-44228/extra", "/v1/nothing/%ff"]
        ) {
          const answer = yield* send(base, "GET", path, auth)
          assert.strictEqual(answer.status, 404, path)
          isErrorBody(answer)
        }
        for (
          const path of [
            "/v1/../etc/passwd",
            "/v1/vuln/../../etc/passwd",
            "/v1/vuln/..",
            "/v1/vuln/%2e%2e",
            "/v1/./vuln/CVE-2021-44228"
          ]
        ) {
          const answer = yield* send(base, "GET", path, auth)
          assert.strictEqual(answer.status, 404, path)
          isErrorBody(answer)
        }

        const cases: ReadonlyArray<readonly [string, string, string]> = [
          ["POST", "/v1/vuln/CVE-2021-44228", "GET, HEAD"],
          ["DELETE", "/v1/info/CVE-2021-44228", "GET, HEAD"],
          ["PUT", "/v1/exploits/CVE-2021-44228", "GET, HEAD"],
          ["DELETE", "/v1/auth/token", "GET, POST"],
          ["POST", "/v1/openapi.json", "GET, HEAD"],
          ["POST", "/", "GET, HEAD"],
          ["POST", "/healthz", "GET, HEAD"]
        ]
        for (const [method, path, allow] of cases) {
          const answer = yield* send(base, method, path, auth)
          assert.strictEqual(answer.status, 405, `${method} ${path}`)
          assert.strictEqual(answer.headers.allow, allow, `${method} ${path}`)
          isErrorBody(answer)
        }
        // A segment longer than the router reads (2,048 characters) is 414, not a 405 naming the method asked.
        for (
          const path of [
            "/v1/vuln/" + "A".repeat(3000),
            "/v1/info/" + "%41".repeat(2049),
            "/v1/exploits/" + "A".repeat(2049) + "?x=1"
          ]
        ) {
          const answer = yield* send(base, "GET", path, auth)
          assert.strictEqual(answer.status, 414, path.slice(0, 20))
          assert.strictEqual(answer.body.error, "a path segment is longer than 2048 characters")
        }
        // The routes themselves still answer.
        assert.strictEqual((yield* send(base, "GET", "/v1/vuln/CVE-2021-44228", auth)).status, 200)
        assert.strictEqual((yield* send(base, "HEAD", "/v1/vuln/CVE-2021-44228", auth)).status, 200)
      })))

    it.effect("identifiers over 100 characters or with NUL are 400 after authentication; 401s carry WWW-Authenticate", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer
        const { apiKey } = yield* newOrg
        const auth = { authorization: apiKey }
        for (const endpoint of ["info", "vuln", "exploits"]) {
          for (
            const identifier of [
              "CVE-2021-" + "4".repeat(92),
              "X".repeat(1500),
              "CVE-2021-44228%00",
              "CVE-2021-44228%0a"
            ]
          ) {
            const path = `/v1/${endpoint}/${identifier}`
            const anonymous = yield* send(base, "GET", path)
            assert.strictEqual(anonymous.status, 401, path)
            isErrorBody(anonymous)
            assert.strictEqual(anonymous.headers["www-authenticate"], `ApiKey realm="vdb", Bearer realm="vdb"`)

            const answer = yield* send(base, "GET", path, auth)
            assert.strictEqual(answer.status, 400, path)
            isErrorBody(answer)
            assert.isAtMost(answer.body.error.length, 200)
          }
        }
        // Exactly 100 characters is still an identifier (unknown here).
        const hundred = yield* send(base, "GET", `/v1/vuln/PKG-${"a".repeat(96)}`, auth)
        assert.strictEqual(hundred.status, 404)
      })))

    it.effect("a request with NUL in its identifier never loses other organizations' usage entries", () =>
      Effect.scoped(Effect.gen(function*() {
        const base = yield* startServer
        const sql = yield* SqlClient.SqlClient
        const good = yield* newOrg
        const bad = yield* newOrg
        // Concurrent, so both land in one batch of the usage log.
        yield* Effect.all([
          send(base, "GET", "/v1/vuln/CVE-2021-44228", { authorization: good.apiKey }),
          send(base, "GET", "/v1/vuln/CVE-2021-44228%00", { authorization: bad.apiKey }),
          send(base, "GET", "/v1/info/CVE-2021-44228", { authorization: good.apiKey })
        ], { concurrency: "unbounded" })
        let rows: ReadonlyArray<{ org_uuid: string; identifier: string; status: number }> = []
        for (let i = 0; i < 60 && rows.length < 3; i++) {
          yield* Effect.sleep("50 millis")
          rows = yield* sql<{ org_uuid: string; identifier: string; status: number }>`
            SELECT org_uuid::text AS org_uuid, identifier, status FROM usage_log
            WHERE org_uuid IN (${good.uuid}::uuid, ${bad.uuid}::uuid) ORDER BY status, identifier`
        }
        assert.deepStrictEqual(rows.map((r) => [r.org_uuid, r.identifier, r.status]), [
          [good.uuid, "CVE-2021-44228", 200],
          [good.uuid, "CVE-2021-44228", 200],
          [bad.uuid, "CVE-2021-44228\uFFFD", 400]
        ])
      })))
  })
})
