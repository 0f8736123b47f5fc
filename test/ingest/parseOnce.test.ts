import { readFileSync } from "node:fs"
import { afterEach, describe, expect, it, vi } from "vitest"
import { openReader } from "../../src/ingest/formats/index.ts"
import type { IngestSource, ItemProblem, UpstreamItem } from "../../src/ingest/Upstream.ts"

const fixture = (path: string) => readFileSync(new URL(`../fixtures/data/sources/${path}`, import.meta.url))

/** Every read of a file given in chunks of `size` bytes, and how many times `JSON.parse` ran meanwhile. */
const readCounting = (source: IngestSource, file: string, bytes: Uint8Array, size = bytes.length) => {
  const parse = vi.spyOn(JSON, "parse")
  const reader = openReader(source, file)
  const out: Array<UpstreamItem | ItemProblem> = []
  for (let at = 0; at < bytes.length; at += size) out.push(...reader.push(bytes.subarray(at, at + size)))
  out.push(...reader.end())
  const parses = parse.mock.calls.length
  parse.mockRestore()
  return { out, parses }
}

const summary = (out: ReadonlyArray<UpstreamItem | ItemProblem>) =>
  out.map((r) => "raw" in r ? { id: r.identifier, position: r.position, raw: r.raw } : r)

afterEach(() => vi.restoreAllMocks())

describe("a JSON document is parsed once", () => {
  it("a pretty-printed record file (CVE List, OSV): one parse, with or without chunks", () => {
    const bytes = fixture("mitre/CVE-2024-47177.json")
    const whole = readCounting("mitre", "CVE-2024-47177.json", bytes)
    expect(whole.parses).toBe(1)
    expect(summary(whole.out)).toEqual([{
      id: "CVE-2024-47177",
      position: "CVE-2024-47177.json",
      raw: JSON.stringify(JSON.parse(bytes.toString("utf8")))
    }])
    const chunked = readCounting("mitre", "CVE-2024-47177.json", bytes, 100)
    expect(chunked.parses).toBe(1)
    expect(summary(chunked.out)).toEqual(summary(whole.out))
  })

  it("a one-line document followed by a newline: the first line's parse is the document's", () => {
    const page = `${JSON.stringify(JSON.parse(fixture("nist-nvd/CVE-2022-29194.json").toString("utf8")))}\n\n`
    const { out, parses } = readCounting("nist-nvd", "page.json", Buffer.from(page))
    expect(parses).toBe(1)
    expect(summary(out).map((r) => "id" in r ? r.id : r)).toEqual(["CVE-2022-29194"])
  })

  it("a held document with a list is still cut into its records, even when the list's name is escaped", () => {
    const record = (n: number) => ({ cveMetadata: { cveId: `CVE-2024-000${n}`, state: "PUBLISHED" }, containers: {} })
    const plain = JSON.stringify({ records: [record(1), record(2)] }, null, 2)
    const escaped = plain.replace("\"records\"", "\"rec\\u006frds\"")
    for (const text of [plain, escaped]) {
      const { out } = readCounting("mitre", "bulk.json", Buffer.from(text), 64)
      expect(summary(out).map((r) => r.position)).toEqual(["bulk.json#0", "bulk.json#1"])
    }
  })

  it("a malformed held document is one problem at the file, as before", () => {
    const { out } = readCounting("mitre", "bad.json", Buffer.from("{\n  \"dataType\": \"CVE_RECORD\",\n  oops\n}"))
    expect(out).toEqual([{ position: "bad.json", reason: expect.stringMatching(/^malformed JSON: /) }])
  })

  it("a document past the held size is cut as its bytes arrive, not at its end", () => {
    const record = (n: number) => ({
      cveMetadata: { cveId: `CVE-2024-${String(n).padStart(5, "0")}`, state: "PUBLISHED" },
      containers: { cna: { descriptions: [{ lang: "en", value: "x".repeat(1000) }] } }
    })
    const text = JSON.stringify({ records: Array.from({ length: 3000 }, (_, n) => record(n + 1)) }, null, 2)
    const bytes = Buffer.from(text)
    const reader = openReader("mitre", "big.json")
    let beforeEnd = 0
    for (let at = 0; at < bytes.length; at += 64 * 1024) {
      beforeEnd += [...reader.push(bytes.subarray(at, at + 64 * 1024))].length
    }
    const atEnd = [...reader.end()].length
    expect(beforeEnd + atEnd).toBe(3000)
    expect(beforeEnd).toBeGreaterThan(2900)
  })
})
