import { assert, describe, it } from "@effect/vitest"
import { queryKeyOfBody } from "../../src/api/QueryAnswers.ts"

/**
 * `queryKeyOfBody`: the `/v1/query` fast path's reading of a body. Keyed by what the query means
 * (the handler's key), and undefined on any doubt, so the HttpApi answers those.
 */
describe("the /v1/query fast path's key of a body", () => {
  const key = (body: unknown) => queryKeyOfBody(typeof body === "string" ? body : JSON.stringify(body))

  it("keys by meaning: the normalised package, the version, the page", () => {
    const plain = key({ package: { ecosystem: "PyPI", name: "jinja2" }, version: "2.4.1" })
    assert.isDefined(plain)
    assert.strictEqual(key({ package: { ecosystem: "pypi", name: "Jinja2" }, version: "2.4.1" }), plain)
    assert.strictEqual(key({ version: "2.4.1", package: { name: "jinja2", ecosystem: "PyPI" } }), plain)
    assert.strictEqual(key({ package: { purl: "pkg:pypi/jinja2@2.4.1" } }), plain)
    assert.strictEqual(
      key({ package: { ecosystem: "PyPI", name: "jinja2" }, version: "2.4.1", page_token: "o0" }),
      plain
    )
    assert.strictEqual(key({ package: { ecosystem: "PyPI", name: "jinja2" }, version: "2.4.1", page_token: "" }), plain)
    assert.notStrictEqual(key({ package: { ecosystem: "PyPI", name: "jinja2" }, version: "2.4.2" }), plain)
    assert.notStrictEqual(
      key({ package: { ecosystem: "PyPI", name: "jinja2" }, version: "2.4.1", page_token: "o500" }),
      plain
    )
    // No version (every record) and the empty version are different questions.
    const all = key({ package: { ecosystem: "PyPI", name: "jinja2" } })
    assert.isDefined(all)
    assert.notStrictEqual(key({ package: { ecosystem: "PyPI", name: "jinja2" }, version: "" }), all)
    // A release reads only its entries.
    assert.notStrictEqual(
      key({ package: { ecosystem: "Debian:12", name: "openssl" }, version: "3.0.1" }),
      key({ package: { ecosystem: "Debian", name: "openssl" }, version: "3.0.1" })
    )
  })

  it("any doubt is the HttpApi's: what the handler refuses, and any shape but the payload's own", () => {
    const doubts: ReadonlyArray<unknown> = [
      "",
      "not json",
      "[]",
      "null",
      "\"text\"",
      { package: { ecosystem: "PyPI", name: "jinja2" }, commit: "abc" },
      { package: { ecosystem: "PyPI", name: "jinja2" }, version: "1.0", extra: 1 },
      { package: { ecosystem: "PyPI", name: "jinja2", extra: "x" }, version: "1.0" },
      { package: { ecosystem: "PyPI", name: 1 }, version: "1.0" },
      { package: { ecosystem: "PyPI", name: "jinja2" }, version: 1 },
      { package: { ecosystem: "PyPI", name: "jinja2" }, version: null },
      { package: { ecosystem: "PyPI", name: "jinja2" }, page_token: 5 },
      { package: { ecosystem: "PyPI", name: "jinja2" }, page_token: "bad" },
      { package: [], version: "1.0" },
      { version: "1.0" },
      { package: { ecosystem: "Nope", name: "x" }, version: "1.0" },
      { package: { ecosystem: "GitHub Actions", name: "a/b" }, version: "1.0" },
      { package: { ecosystem: "PyPI" }, version: "1.0" },
      { package: { ecosystem: "PyPI", name: " " }, version: "1.0" },
      { package: { purl: "pkg:pypi/jinja2@2.4.1" }, version: "2.4.1" },
      { package: { purl: "not a purl" } },
      "{\"__proto__\": {}, \"package\": {\"ecosystem\": \"PyPI\", \"name\": \"jinja2\"}}"
    ]
    for (const body of doubts) assert.isUndefined(key(body), JSON.stringify(body))
  })
})
