import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { VulnStore } from "../../src/vulns/VulnStore.ts"
import { PostgresTest } from "../support/database.ts"
import { SecretBoxTest } from "../support/secrets.ts"
import { get, json, type RawResponse } from "./cache/http.ts"
import { ingestRecord } from "./cache/seed.ts"
import { serveWithOrg } from "./harness.ts"

/**
 * What the router would read differently from the handler: `;` (effect's FindMyWay cuts the path
 * there, as at `?`) and a percent-encoding that does not decode (no route at all). Both are the
 * identifier's problem: 400 after authentication, on the HttpApi and past the `/vuln` fast path.
 */
const Deps = Layer.mergeAll(Organizations.layer, VulnStore.layer).pipe(
  Layer.provideMerge(Layer.mergeAll(PostgresTest, SecretBoxTest))
)

const isErrorBody = (r: RawResponse, label: string) => {
  assert.match(String(r.headers["content-type"]), /^application\/json/, label)
  const body = json(r)
  assert.deepStrictEqual(Object.keys(body).sort(), ["error", "success"], label)
  assert.strictEqual(body.success, false, label)
  return body.error as string
}

/** The API with one organization and one record, whose `/vuln` answer is cached (the fast path's condition). */
const serveRecord = (name: string, identifier: string) =>
  Effect.gen(function*() {
    const { base, org } = yield* serveWithOrg(name, { perMinute: 0, perWeek: 0 })
    yield* ingestRecord({ source: "mitre", identifier })
    const auth = { authorization: org.apiKey }
    for (let i = 0; i < 2; i++) assert.strictEqual((yield* get(`${base}/vuln/${identifier}`, auth)).status, 200)
    return { base, auth }
  })

layer(Deps, { excludeTestServices: true, timeout: 60_000 })((it) => {
  describe("API routing", () => {
    it.effect("a path with ';' is a malformed identifier (400 after authentication), never the record before it", () =>
      Effect.scoped(Effect.gen(function*() {
        const { auth, base } = yield* serveRecord("semicolon", "CVE-2035-0001")
        for (
          const path of [
            "/vuln/CVE-2035-0001;DROP",
            "/vuln/CVE-2035-0001;",
            "/info/CVE-2035-0001;x",
            "/exploits/CVE-2035-0001;limit=1",
            "/exploits/CVE-2035-0001;limit=1?limit=2"
          ]
        ) {
          assert.strictEqual((yield* get(`${base}${path}`, {})).status, 401, path)
          const answer = yield* get(`${base}${path}`, auth)
          assert.strictEqual(answer.status, 400, path)
          assert.strictEqual(isErrorBody(answer, path), `malformed identifier: ";" is not allowed`, path)
        }
        // Before the identifier, `;` makes a path no route has (it used to be cut to `/v1/vuln`, the missing-identifier 400).
        for (const path of ["/vuln;x/CVE-2035-0001", "/auth/token;x", "/vuln;"]) {
          const answer = yield* get(`${base}${path}`, auth)
          assert.strictEqual(answer.status, 404, path)
          isErrorBody(answer, path)
        }
        // An encoded `;` is the same identifier, refused the same way.
        assert.strictEqual((yield* get(`${base}/vuln/CVE-2035-0001%3BDROP`, auth)).status, 400)
        assert.strictEqual((yield* get(`${base}/vuln/CVE-2035-0001`, auth)).status, 200)
      })))

    it.effect("a malformed percent-encoding in an identifier is 400 after authentication, not 'no such route'", () =>
      Effect.scoped(Effect.gen(function*() {
        const { auth, base } = yield* serveRecord("encoding", "CVE-2035-0002")
        for (const endpoint of ["vuln", "info", "exploits"]) {
          for (
            const identifier of [
              "%zz",
              "%",
              "CVE-2035-0002%",
              "%FF",
              "%C3%28",
              "%ED%A0%80",
              "%C0%AE%C0%AE",
              "CVE-2035-0002%2D%FF"
            ]
          ) {
            const path = `/${endpoint}/${identifier}`
            const anonymous = yield* get(`${base}${path}`, {})
            assert.strictEqual(anonymous.status, 401, path)
            assert.strictEqual(anonymous.headers["www-authenticate"], `ApiKey realm="vdb", Bearer realm="vdb"`, path)
            const answer = yield* get(`${base}${path}`, auth)
            assert.strictEqual(answer.status, 400, path)
            assert.strictEqual(
              isErrorBody(answer, path),
              `malformed identifier: malformed percent-encoding ("%" is not allowed)`,
              path
            )
          }
        }
        // Valid encodings still decode; a malformed one elsewhere in the path is still no route.
        assert.strictEqual((yield* get(`${base}/vuln/CVE%2D2035-0002`, auth)).status, 200)
        assert.strictEqual((yield* get(`${base}/info/CVE-2035-0002?x=%zz`, auth)).status, 200)
        for (const path of ["/nothing%zz", "/vuln%FF/CVE-2035-0002", "/vuln/%zz/extra"]) {
          const answer = yield* get(`${base}${path}`, auth)
          assert.strictEqual(answer.status, 404, path)
          isErrorBody(answer, path)
        }
      })))

    it.effect("the OpenAPI document lists no success for the operations that always answer 400", () =>
      Effect.scoped(Effect.gen(function*() {
        const { base } = yield* serveWithOrg("openapi", { perMinute: 0, perWeek: 0 })
        const spec = json(yield* get(`${base}/openapi.json`, {}))
        const statuses = (path: string, method: string) => Object.keys(spec.paths[path][method].responses)
        for (const [path, method] of [["/v1/auth/token", "post"], ["/v1/vuln", "get"]] as const) {
          const listed = statuses(path, method)
          assert.isFalse(listed.some((status) => status.startsWith("2")), `${method} ${path}: ${listed}`)
          assert.include(listed, "400", `${method} ${path}`)
        }
        // The others keep their success.
        assert.include(statuses("/v1/auth/token", "get"), "200")
        for (const path of ["/v1/info/{identifier}", "/v1/vuln/{identifier}", "/v1/exploits/{identifier}"]) {
          assert.includeMembers(statuses(path, "get"), ["200", "304", "400"], path)
        }
      })))
  })
})
