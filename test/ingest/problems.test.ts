import { describe, expect, it } from "vitest"
import { detectSource, normalise, openReader, readItems } from "../../src/ingest/formats/index.ts"
import type { IngestSource, ItemProblem, UpstreamItem } from "../../src/ingest/Upstream.ts"
import { FIXTURES, ingestTree } from "./corpus.ts"

const read = (source: IngestSource, file: string, content: string) => [...readItems(source, file, content)]
const problems = (xs: ReadonlyArray<UpstreamItem | ItemProblem>) => xs.filter((x): x is ItemProblem => !("raw" in x))

describe("malformed input gives ItemProblems with position and reason", () => {
  it("malformed JSON", () => {
    expect(read("mitre", "a/CVE-1.json", "{\"dataType\": ")).toEqual([
      { position: "a/CVE-1.json", reason: expect.stringMatching(/^malformed JSON/) }
    ])
  })

  it("a bad NDJSON line is reported at its line; the others are read", () => {
    const line = (id: string) => JSON.stringify({ id, modified: "2024-01-01T00:00:00Z", aliases: [] })
    const out = read("osv", "x.ndjson", `${line("GO-2024-0001")}\n{oops\n${line("GO-2024-0002")}\n`)
    expect(out.filter((x) => "raw" in x)).toHaveLength(2)
    expect(problems(out)).toEqual([{ position: "x.ndjson:2", reason: expect.stringMatching(/^malformed JSON/) }])
  })

  it("a record nested thousands of levels deep is a problem at its own position; the records after it are read", () => {
    const line = (id: string, extra = "") => `{"id":"${id}","modified":"2024-01-01T00:00:00Z","aliases":[]${extra}}`
    const deep = line("GO-2024-0002", `,"database_specific":{"x":${"[".repeat(20_000)}${"]".repeat(20_000)}}`)
    const records = [line("GO-2024-0001"), deep, line("GO-2024-0003"), line("GO-2024-0004")]
    for (
      const [file, content, at] of [["x.ndjson", records.join("\n"), "x.ndjson:2"], [
        "x.json",
        `[${records.join(",")}]`,
        "x.json#1"
      ]] as const
    ) {
      const out = read("osv", file, content)
      expect(out.filter((x) => "raw" in x).map((x) => (x as UpstreamItem).identifier), file).toEqual([
        "GO-2024-0001",
        "GO-2024-0003",
        "GO-2024-0004"
      ])
      expect(problems(out), file).toEqual([{
        position: at,
        reason: expect.stringMatching(/^cannot read the record: /)
      }])
    }
  })

  it("a reason never quotes the input (escape sequences reached the terminal, and each bad record was its own reason)", () => {
    const reasons = problems([
      ...read("osv", "a.ndjson", "{\u001b[31mRED\u0007}\n"),
      ...read("osv", "b.json", "\u001b]0;pwned\u0007"),
      ...read("osv", "c.json", "{\"id\": \"x\"")
    ]).map((p) => p.reason)
    expect(reasons).toEqual([
      "malformed JSON: Expected property name or '}' in JSON at position 1 (line 1 column 2)",
      "malformed JSON: unexpected character U+001B",
      "malformed JSON: Expected ',' or '}' after property value in JSON at position 10 (line 1 column 11)"
    ])
    for (const reason of reasons) expect(reason).not.toMatch(/[\u0000-\u001f]|RED|pwned|is not valid JSON/)
    expect(problems(read("osv", "d.json", "hello"))).toEqual([{
      position: "d.json",
      reason: "malformed JSON: unexpected character U+0068"
    }])
  })

  it("a UTF-8 byte order mark before JSON, NDJSON or CSV is dropped, whatever the chunks", () => {
    const record = JSON.stringify({ id: "GO-2024-0001", modified: "2024-01-01T00:00:00Z", aliases: [] })
    for (
      const [file, text] of [["x.json", record], [
        "x.ndjson",
        `${record}\n${record.replace("0001", "0002")}\n`
      ]] as const
    ) {
      const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)])
      for (const cut of [1, 2, 3, 5]) {
        const reader = openReader("osv", file)
        const out = [...reader.push(bytes.subarray(0, cut)), ...reader.push(bytes.subarray(cut)), ...reader.end()]
        expect(problems(out), `${file} cut at ${cut}`).toEqual([])
        expect(out.length, `${file} cut at ${cut}`).toBe(file === "x.json" ? 1 : 2)
      }
    }
  })

  it("missing identifier, impossible date, bad id", () => {
    expect(problems(read("cisa-kev", "k.json", JSON.stringify({ vulnerabilities: [{ product: "x" }] }))))
      .toEqual([{ position: "k.json#0", reason: "KEV entry without cveID" }])
    expect(problems(read("cisa-kev", "k.json", JSON.stringify({ cveID: "CVE-2024-0001", dateAdded: "2024-02-30" }))))
      .toEqual([{ position: "k.json", reason: expect.stringContaining("impossible dateAdded") }])
    expect(
      problems(
        read(
          "euvd",
          "e.json",
          JSON.stringify({ items: [{ id: "EUVD-2024-1", datePublished: "Feb 30, 2024, 1:00:00 AM" }] })
        )
      )
    )
      .toEqual([{ position: "e.json#0", reason: expect.stringContaining("impossible date datePublished") }])
    expect(
      problems(read("nist-nvd", "n.json", JSON.stringify({ vulnerabilities: [{ cve: { id: "CVE-24-1" } }, {}] }))).map((
        p
      ) => p.position)
    )
      .toEqual(["n.json#0", "n.json#1"])
  })

  it("CSV: a broken row is reported at its line", () => {
    const csv = "cve,epss,percentile\nCVE-2024-0001,0.1,0.5\nCVE-2024-0002,abc,0.5\n"
    expect(problems(read("epss", "e.csv", `#model_version:v1,score_date:2026-09-29T12:00:22Z\n${csv}`)))
      .toEqual([{ position: "e.csv:4", reason: expect.stringContaining("epss/percentile") }])
    const edb = "id,file,description,date_published,codes\n1,a,\"unterminated,2020-01-01,CVE-2020-0001\n"
    expect(problems(read("exploit-db", "f.csv", edb))[0]).toMatchObject({
      reason: expect.stringMatching(/malformed CSV/)
    })
  })

  it("CSV: a row with several stray quotes is one problem at its line, naming no value; a source without CSV is refused unread", () => {
    const csv = "cve,epss,percentile\nCVE-2024-0001,0.1,0.5\nCVE-2099-0001,0.1\"x\"y \"z,0.5\nCVE-2024-0002,0.2,0.6\n"
    const out = read("epss", "e.csv", `#model_version:v1,score_date:2026-09-29T12:00:22Z\n${csv}`)
    expect(out.filter((x) => "raw" in x)).toHaveLength(2)
    expect(problems(out)).toEqual([{ position: "e.csv:4", reason: expect.stringMatching(/^malformed CSV row: /) }])
    expect(problems(out)[0]!.reason).not.toMatch(/at line|value is|0\.1"x/)
    const reader = openReader("osv", "x.json", "csv")
    expect([...reader.push(Buffer.from("{\"id\": \"a,b\"\"\"}\n".repeat(40))), ...reader.end()])
      .toEqual([{ position: "x.json", reason: "CSV is not a format of osv" }])
  })

  it("YAML and empty files", () => {
    expect(problems(read("nuclei", "t.yaml", "id: [unclosed"))[0]!.reason).toMatch(/^malformed YAML/)
    expect(read("nuclei", "t.yaml", "   ")).toEqual([{ position: "t.yaml", reason: "empty file" }])
  })

  it("normalise reports instead of throwing", () => {
    const item: UpstreamItem = { source: "nist-nvd", identifier: "CVE-2024-0001", raw: "1", position: "p", parsed: 1 }
    expect(normalise(item)).toEqual({ position: "p", reason: expect.any(String) })
  })

  it("detectSource maps folders and skips what is not upstream data", () => {
    expect(detectSource("sources/mitre/CVE-2021-44228.json")).toEqual({ kind: "source", source: "mitre" })
    expect(detectSource("corpus/osv/go-vulndb.ndjson.gz")).toEqual({ kind: "source", source: "osv" })
    expect(detectSource("sources/sploitscan/CVE-2021-44228.json").kind).toBe("skip")
    expect(detectSource("schemas/osv-schema.json").kind).toBe("skip")
    expect(detectSource("manifest.json").kind).toBe("skip")
  })
})

describe("determinism", () => {
  it("reading and normalising twice gives identical JSON", () => {
    const a = ingestTree(FIXTURES)
    const b = ingestTree(FIXTURES)
    expect(JSON.stringify(b.outcomes)).toBe(JSON.stringify(a.outcomes))
  })

  it("the same item from a per-id file and from a bulk file has the same raw bytes", () => {
    const { outcomes } = ingestTree(FIXTURES)
    const raws = (id: string) =>
      new Set(outcomes.filter((o) => o.source === "nist-nvd" && o.item.identifier === id).map((o) => o.item.raw))
    const inBoth = outcomes.filter((o) => o.file.startsWith("corpus/nist-nvd/")).map((o) => o.item.identifier)
    expect(inBoth.length).toBe(13)
    for (const id of inBoth) expect(raws(id).size).toBe(1)
  })
})
