import { randomBytes } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { gunzipSync } from "node:zlib"
import { describe, expect, it } from "vitest"
import { documentItems } from "../../src/ingest/formats/documents.ts"
import { detectSource, MAX_RECORD_BYTES, openReader, readItems } from "../../src/ingest/formats/index.ts"
import type { IngestFormat } from "../../src/ingest/formats/index.ts"
import type { IngestSource, ItemProblem, UpstreamItem } from "../../src/ingest/Upstream.ts"

type Read = UpstreamItem | ItemProblem

/** Feeds `bytes` to a fresh reader in chunks of `step` bytes. */
const readChunked = (source: IngestSource, name: string, bytes: Uint8Array, step: number, format?: IngestFormat) => {
  const reader = openReader(source, name, format)
  const out: Array<Read> = []
  for (let i = 0; i < bytes.length; i += step) out.push(...reader.push(bytes.subarray(i, i + step)))
  out.push(...reader.end())
  return out
}

const comparable = (reads: ReadonlyArray<Read>) => JSON.stringify(reads.map((r) => ({ ...r, parsed: undefined })))
const problems = (reads: ReadonlyArray<Read>) => reads.filter((r): r is ItemProblem => !("raw" in r))
const items = (reads: ReadonlyArray<Read>) => reads.filter((r): r is UpstreamItem => "raw" in r)

const FIXTURES = new URL("../fixtures/data/", import.meta.url).pathname
const walk = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]
  )

describe("incremental readers", () => {
  it("read every fixture file the same whatever the chunk boundaries (3 bytes, 4 KiB, whole)", () => {
    let files = 0
    for (const path of walk(FIXTURES)) {
      const rel = relative(FIXTURES, path)
      const detected = detectSource(rel)
      if (detected.kind === "skip") continue
      const raw = readFileSync(path)
      const bytes = path.endsWith(".gz") ? gunzipSync(raw) : raw
      const whole = comparable(readChunked(detected.source, rel, bytes, bytes.length || 1))
      expect(comparable(readChunked(detected.source, rel, bytes, 4096)), rel).toBe(whole)
      if (bytes.length < 200_000) expect(comparable(readChunked(detected.source, rel, bytes, 3)), rel).toBe(whole)
      files++
    }
    expect(files).toBeGreaterThan(250)
  })

  it("give for every JSON fixture document exactly what reading the whole parsed document gives", () => {
    let documents = 0
    for (const path of walk(FIXTURES)) {
      const rel = relative(FIXTURES, path)
      const detected = detectSource(rel)
      if (detected.kind === "skip" || !/\.json(\.gz)?$/.test(rel)) continue
      const raw = readFileSync(path)
      const text = (path.endsWith(".gz") ? gunzipSync(raw) : raw).toString("utf8")
      let doc: unknown
      try {
        doc = JSON.parse(text)
      } catch {
        continue // NDJSON under a .json name
      }
      const whole = [
        ...documentItems(detected.source, doc, { source: detected.source, fileName: rel, position: rel, text })
      ]
      expect(comparable(readChunked(detected.source, rel, Buffer.from(text), 1000)), rel).toBe(comparable(whole))
      documents++
    }
    expect(documents).toBeGreaterThan(200)
  })

  it("cut a JSON list into its elements, with their positions, as the source's reader does", () => {
    const kev = (id: string) => ({ cveID: id, dateAdded: "2024-01-02", vendorProject: "x" })
    const doc = JSON.stringify(
      { title: "KEV", vulnerabilities: [kev("CVE-2024-0001"), { product: "x" }, kev("CVE-2024-0002")], count: 3 },
      null,
      2
    )
    const reads = readChunked("cisa-kev", "k.json", Buffer.from(doc), 7)
    expect(items(reads).map((r) => [r.identifier, r.position])).toEqual([["CVE-2024-0001", "k.json#0"], [
      "CVE-2024-0002",
      "k.json#2"
    ]])
    expect(problems(reads)).toEqual([{ position: "k.json#1", reason: "KEV entry without cveID" }])
    expect(comparable(reads)).toBe(comparable([...readItems("cisa-kev", "k.json", doc)]))
  })

  it("report a record over the cap at its position and read on (NDJSON line, JSON list element)", () => {
    const big = "x".repeat(MAX_RECORD_BYTES + 10)
    const line = (id: string) => JSON.stringify({ id, modified: "2024-01-01T00:00:00Z" })
    const ndjson = Buffer.from(`${line("GO-2024-0001")}\n{"id":"${big}"}\n${line("GO-2024-0002")}\n`)
    const fromLines = readChunked("osv", "x.ndjson", ndjson, 256 * 1024)
    expect(items(fromLines).map((r) => r.identifier)).toEqual(["GO-2024-0001", "GO-2024-0002"])
    expect(problems(fromLines)).toEqual([{
      position: "x.ndjson:2",
      reason: expect.stringMatching(/over the 16 MiB per-record cap/)
    }])

    const list = Buffer.from(`{"vulns": [\n${line("GO-2024-0001")},\n{"id": "${big}"},\n${line("GO-2024-0002")}\n]}`)
    const fromList = readChunked("osv", "all.json", list, 256 * 1024)
    expect(items(fromList).map((r) => [r.identifier, r.position])).toEqual([["GO-2024-0001", "all.json#0"], [
      "GO-2024-0002",
      "all.json#2"
    ]])
    expect(problems(fromList)).toEqual([{
      position: "all.json#1",
      reason: expect.stringMatching(/over the 16 MiB per-record cap/)
    }])
  })

  it("skip a deeply nested element over the cap without building it, and read the next", () => {
    const depth = MAX_RECORD_BYTES / 2 + 8
    const nested = Buffer.concat([
      Buffer.from("{\"vulns\": ["),
      Buffer.alloc(depth, "["),
      Buffer.alloc(depth, "]"),
      Buffer.from(","),
      Buffer.from(JSON.stringify({ id: "GO-2024-0003", modified: "2024-01-01T00:00:00Z" })),
      Buffer.from("]}")
    ])
    const reads = readChunked("osv", "deep.json", nested, 256 * 1024)
    expect(items(reads).map((r) => [r.identifier, r.position])).toEqual([["GO-2024-0003", "deep.json#1"]])
    expect(problems(reads)).toEqual([{
      position: "deep.json#0",
      reason: expect.stringMatching(/over the 16 MiB per-record cap/)
    }])
  })

  it("turn random bytes into problems, never items, in every format", () => {
    const noise = randomBytes(2 * 1024 * 1024)
    for (const format of ["json", "ndjson", "csv", "yaml"] as const) {
      const reads = readChunked("osv", "noise", noise, 256 * 1024, format)
      expect(items(reads), format).toEqual([])
      expect(problems(reads).length, format).toBeGreaterThan(0)
    }
  })

  it("tell NDJSON from one document by content when the name does not say", () => {
    const a = JSON.stringify({ id: "GO-2024-0001", modified: "2024-01-01T00:00:00Z" })
    const b = JSON.stringify({ id: "GO-2024-0002", modified: "2024-01-01T00:00:00Z" })
    expect(items(readChunked("osv", "stdin", Buffer.from(`${a}\n${b}\n`), 5)).map((r) => r.position)).toEqual([
      "stdin:1",
      "stdin:2"
    ])
    expect(items(readChunked("osv", "stdin", Buffer.from(`${a}\n\n`), 5)).map((r) => r.position)).toEqual(["stdin"])
  })
})
