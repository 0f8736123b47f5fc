import { assert, describe, it } from "@effect/vitest"
import { escapedUri, uri } from "../../src/ingest/formats/text.ts"
import { decode, FIXTURES, walk } from "./corpus.ts"

/** `uri` as it was before its fast path: every value escaped character by character, then the shape checked. */
const escapedEverywhere = (value: string): string | undefined => {
  const v = value.trim()
  if (v.length === 0 || /\s/.test(v) || !/^[a-z][a-z0-9+\-.]*:/i.test(v)) return undefined
  const out = escapedUri(v)
  return /^[a-z][a-z0-9+\-.]*:(\/\/)?[A-Za-z0-9\-._~!$&'()*+,;=:@/?#%]+$/i.test(out) && out.length <= 2048
    ? out
    : undefined
}

/** Every string value of the fixtures' JSON and NDJSON files that starts like a URL. */
const fixtureUrls = (): Array<string> => {
  const found = new Set<string>()
  const visit = (value: unknown): void => {
    if (typeof value === "string") {
      if (/^[a-z][a-z0-9+\-.]*:/i.test(value.trim())) found.add(value)
    } else if (Array.isArray(value)) value.forEach(visit)
    else if (value !== null && typeof value === "object") Object.values(value).forEach(visit)
  }
  for (const path of walk(FIXTURES)) {
    if (!/\.(json|ndjson)(\.gz)?$/.test(path)) continue
    const text = decode(path)
    try {
      visit(JSON.parse(text))
    } catch {
      for (const line of text.split("\n")) if (line.trim() !== "") visit(JSON.parse(line))
    }
  }
  return [...found]
}

describe("uri", () => {
  it("gives what escaping every character gives, for every URL-like value of the fixtures", () => {
    const urls = fixtureUrls()
    assert.isAtLeast(urls.length, 500)
    for (const url of urls) assert.strictEqual(uri(url), escapedEverywhere(url), url)
  })

  it("escapes what RFC 3986 does not allow, and keeps a valid URI as it is", () => {
    const cases: ReadonlyArray<readonly [string, string | undefined]> = [
      ["https://example.com/a?b=c#d", "https://example.com/a?b=c#d"],
      ["  https://example.com/%2Fx  ", "https://example.com/%2Fx"],
      ["https://example.com/%2fx", "https://example.com/%2fx"],
      ["https://example.com/100%", "https://example.com/100%25"],
      ["https://example.com/%zz", "https://example.com/%25zz"],
      ["https://example.com/%4", "https://example.com/%254"],
      ["https://example.com/a#b#c", "https://example.com/a#b%23c"],
      ["https://example.com/ä", "https://example.com/%C3%A4"],
      ["https://example.com/😀", "https://example.com/%F0%9F%98%80"],
      ["https://example.com/[x]", "https://example.com/%5Bx%5D"],
      ["https://example.com/a b", undefined],
      ["example.com/a", undefined],
      ["mailto:security@example.com", "mailto:security@example.com"],
      ["https:", undefined],
      [`https://example.com/${"a".repeat(2048)}`, undefined]
    ]
    for (const [input, expected] of cases) {
      assert.strictEqual(uri(input), expected, input)
      assert.strictEqual(escapedEverywhere(input), expected, input)
    }
  })
})
