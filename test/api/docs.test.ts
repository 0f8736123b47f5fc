import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { CveSummary, VulnRecords } from "../../schema/CveSummary.ts"
import { ExploitResponse } from "../../schema/ExploitResponse.ts"
import { TokenResponse } from "../../schema/TokenResponse.ts"
import { Organizations } from "../../src/orgs/Organizations.ts"
import { PostgresTest } from "../support/database.ts"
import { SecretBoxTest } from "../support/secrets.ts"
import { get, json } from "./cache/http.ts"
import { clientFor, fixtureStore, record, serveWithOrg } from "./harness.ts"

/** What a new user meets on `/docs` and `/` (issue 33). */
const store = fixtureStore({
  lookups: { "CVE-2021-44228": { aliases: [], records: [record("mitre", "CVE-2021-44228")] } },
  exploits: {}
})

const Deps = Layer.mergeAll(Organizations.layer, store).pipe(
  Layer.provideMerge(Layer.mergeAll(PostgresTest, SecretBoxTest))
)

const serve = Effect.map(serveWithOrg("docs", { perMinute: 0, perWeek: 0 }), ({ base, org }) => ({
  base,
  origin: base.replace(/\/v1$/, ""),
  org
}))

const text = (r: { readonly body: Buffer }) => r.body.toString("utf8")

/** Every string a `description` key holds, anywhere in the document. */
const descriptions = (node: unknown, path = "$"): Array<readonly [string, string]> => {
  if (Array.isArray(node)) return node.flatMap((x, i) => descriptions(x, `${path}[${i}]`))
  if (node === null || typeof node !== "object") return []
  return Object.entries(node).flatMap(([key, value]) =>
    key === "description" && typeof value === "string"
      ? [[path, value] as const]
      : descriptions(value, `${path}.${key}`)
  )
}

layer(Deps, { excludeTestServices: true, timeout: 60_000 })((it) => {
  describe("the docs page", () => {
    it.effect("loads nothing from another host: the page and Scalar's script come from the service", () =>
      Effect.gen(function*() {
        const { origin } = yield* serve
        const page = yield* get(`${origin}/docs`, {})
        assert.strictEqual(page.status, 200)
        assert.match(String(page.headers["content-type"]), /^text\/html/)
        const html = text(page)
        const foreign = [...html.matchAll(/https?:\/\/[^\s"'<>)]+/g)].map((m) => m[0]).filter((url) =>
          !url.startsWith(origin)
        )
        assert.deepStrictEqual(foreign, [])
        // Scalar fetches its fonts from its own host unless told not to, and mounts a second reference,
        // with its defaults, on an element of id "api-reference" (seen in Chromium's network log).
        assert.include(html, `"withDefaultFonts":false`)
        assert.notInclude(html, `id="api-reference"`)
        const sources = [...html.matchAll(/<(?:script|link)[^>]+(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)
        assert.lengthOf(sources, 1)
        for (const source of sources) {
          assert.match(source, /^\/docs\/scalar\.js\?v=[0-9a-f]{16}$/)
          const script = yield* get(`${origin}${source}`, {})
          assert.strictEqual(script.status, 200, source)
          assert.match(String(script.headers["content-type"]), /^text\/javascript/)
          assert.strictEqual(script.headers["cache-control"], "public, max-age=31536000, immutable")
          assert.include(text(script), "createApiReference")
        }
        // Any other version of the script is not final.
        assert.strictEqual((yield* get(`${origin}/docs/scalar.js`, {})).headers["cache-control"], "no-cache")
      }))

    it.effect("describes the API key so a renderer sends `Authorization: ApiKey <uuid>:<hex>`", () =>
      Effect.gen(function*() {
        const { base, origin, org } = yield* serve
        const spec = json(yield* get(`${base}/openapi.json`, {}))
        const schemes = spec.components.securitySchemes
        assert.deepInclude(schemes.apiKey, { type: "apiKey", in: "header", name: "Authorization" })
        assert.include(schemes.apiKey.description, "`Authorization: ApiKey <uuid>:<hex>`")
        // Renderers know only these HTTP schemes and show any other as Basic.
        for (const [name, scheme] of Object.entries<any>(schemes)) {
          if (scheme.type === "http") assert.include(["basic", "bearer"], scheme.scheme.toLowerCase(), name)
        }
        assert.deepInclude(schemes.sigv4, { type: "apiKey", in: "header", name: "Authorization" })
        // The page fills the value in as its placeholder (escaped for the script: `<` is \u003c).
        const html = text(yield* get(`${origin}/docs`, {}))
        assert.include(html, `"apiKey":{"value":"ApiKey \\u003cuuid>:\\u003chex>"}`)
        assert.include(html, `"preferredSecurityScheme":"apiKey"`)
        // The typed client and the middleware still speak the HTTP scheme.
        const client = yield* clientFor(base, org.uuid, org.secret, "apiKey")
        assert.strictEqual(
          (yield* client.vulns.info({ params: { identifier: "CVE-2021-44228" } }))._identifier,
          "CVE-2021-44228"
        )
      }))

    it.effect("keeps every `<placeholder>` of a description in a code span, where Markdown cannot take it for a tag", () =>
      Effect.gen(function*() {
        const { base } = yield* serve
        const spec = json(yield* get(`${base}/openapi.json`, {}))
        assert.include(spec.info.description, "`{\"success\": false, \"error\": \"<message>\"}`")
        for (const [path, description] of descriptions(spec)) {
          const outsideCode = description.replace(/`[^`]*`/g, "")
          assert.notMatch(outsideCode, /<[^>]*>/, `${path}: ${description}`)
        }
      }))

    it.effect("gives each 200 a real example that its success schema decodes", () =>
      Effect.gen(function*() {
        const { base } = yield* serve
        const spec = json(yield* get(`${base}/openapi.json`, {}))
        const cases = [
          ["/v1/auth/token", TokenResponse],
          ["/v1/info/{identifier}", CveSummary],
          ["/v1/vuln/{identifier}", VulnRecords],
          ["/v1/exploits/{identifier}", ExploitResponse]
        ] as const
        for (const [path, schema] of cases) {
          const examples = spec.paths[path].get.responses["200"].content["application/json"].schema.examples
          assert.lengthOf(examples ?? [], 1, path)
          const example = Schema.decodeUnknownSync(schema as Schema.Codec<unknown>)(examples[0])
          assert.notDeepEqual(example, {}, path)
          assert.notDeepEqual(example, [{}], path)
        }
        const [summary] =
          spec.paths["/v1/info/{identifier}"].get.responses["200"].content["application/json"].schema.examples
        assert.strictEqual(summary._identifier, "CVE-2021-44228")
        const [exploits] =
          spec.paths["/v1/exploits/{identifier}"].get.responses["200"].content["application/json"].schema.examples
        assert.deepStrictEqual(exploits.exploits.map((e: { source: string }) => e.source), [
          "exploit-db",
          "metasploit",
          "nuclei"
        ])
      }))

    it.effect("`GET /` points to /docs: a 302 with a JSON body naming the reference and the document", () =>
      Effect.gen(function*() {
        const { origin } = yield* serve
        const root = yield* get(`${origin}/`, {})
        assert.strictEqual(root.status, 302)
        assert.strictEqual(root.headers.location, "/docs")
        assert.deepStrictEqual(json(root), { docs: "/docs", openapi: "/v1/openapi.json" })
        // Another method is the dialect's 405, as for every other route.
        const post = yield* Effect.promise(() => fetch(`${origin}/`, { method: "POST" }))
        assert.strictEqual(post.status, 405)
        assert.strictEqual(post.headers.get("allow"), "GET, HEAD")
      }))
  })
})
